// The "Wings" half of the simulator: per-server runtime (install, power state
// machine, console, resource counters), the server filesystem, and the JWTs
// the panel signs with the node's daemon token (the panel's NodeJWTService).
import { createHmac, createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { randomString } from './state.ts';
import type { PanelNode, PanelState, Server } from './state.ts';

export type PowerState = 'offline' | 'starting' | 'running' | 'stopping';
export type PowerSignal = 'start' | 'stop' | 'restart' | 'kill';

export interface FsEntry {
  type: 'file' | 'dir';
  content: Buffer;
  mode: number;
  created: Date;
  modified: Date;
}

export interface Stats {
  current_state: PowerState;
  is_suspended: boolean;
  resources: {
    memory_bytes: number;
    cpu_absolute: number;
    disk_bytes: number;
    network_rx_bytes: number;
    network_tx_bytes: number;
    uptime: number;
  };
}

export interface Runtime {
  power: PowerState;
  console: string[];
  commands: string[];
  files: Map<string, FsEntry>;
  /** ms timestamp when the container started (starting) */
  startedAt: number | null;
  timer: NodeJS.Timeout | null;
  installTimer: NodeJS.Timeout | null;
  /** Ends the running power transition (starting/stopping) now; set while one runs, timed or held. */
  endTransition: (() => void) | null;
  /** Ends the running install now; set while one runs, timed or held. */
  endInstall: (() => void) | null;
  restartPending: boolean;
  resourceCache: { at: number; value: Stats } | null;
}

/** What the console websocket (dev/panel-sim/websocket.ts) hears from a runtime: output lines and power state changes. */
export type ConsoleEvent = { kind: 'output'; line: string } | { kind: 'status'; state: PowerState };
export type ConsoleHook = (rt: Runtime, event: ConsoleEvent) => void;

export interface WingsOptions {
  installMs: number;
  transitionMs: number;
  /** Test controls: a held install or transition waits for endInstall()/endTransition() instead of its timer. */
  holdInstalls?: boolean;
  holdTransitions?: boolean;
  resourcesCacheMs: number;
  consoleLimit: number;
}

/** Thrown by the filesystem; mapped to a DaemonConnectionException by the panel side. */
export class WingsError extends Error {
  status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

const NOT_FOUND = 'The requested resources was not found on the system.';

function b64url(data: Buffer | string): string {
  return Buffer.from(data).toString('base64url');
}

function clock(): string {
  return new Date().toISOString().slice(11, 19);
}

export class Wings {
  state: PanelState;
  options: WingsOptions;
  runtimes = new Map<number, Runtime>();
  /** `unique_id`s of download tokens already used (Wings remembers them: single-use). */
  usedDownloadIds = new Set<string>();
  /** install outcomes to force for the next N installs */
  failInstalls = 0;
  private closed = false;
  /** Console listeners (the websocket): every line logged and every power state change. */
  private consoleHooks = new Set<ConsoleHook>();

  constructor(state: PanelState, options: WingsOptions) {
    this.state = state;
    this.options = options;
  }

  runtime(server: Server): Runtime {
    let rt = this.runtimes.get(server.id);
    if (!rt) {
      rt = {
        power: 'offline',
        console: [],
        commands: [],
        files: new Map([['', { type: 'dir', content: Buffer.alloc(0), mode: 0o755, created: new Date(), modified: new Date() }]]),
        startedAt: null,
        timer: null,
        installTimer: null,
        endTransition: null,
        endInstall: null,
        restartPending: false,
        resourceCache: null,
      };
      this.runtimes.set(server.id, rt);
    }
    return rt;
  }

  close(): void {
    this.closed = true;
    for (const rt of this.runtimes.values()) {
      if (rt.timer) clearTimeout(rt.timer);
      if (rt.installTimer) clearTimeout(rt.installTimer);
      rt.timer = null;
      rt.installTimer = null;
    }
  }

  private schedule(fn: () => void, ms: number): NodeJS.Timeout {
    const t = setTimeout(() => {
      if (!this.closed) fn();
    }, ms);
    return t;
  }

  /** Listen to every runtime's console lines and state changes; returns the unsubscribe. */
  onConsole(hook: ConsoleHook): () => void {
    this.consoleHooks.add(hook);
    return () => this.consoleHooks.delete(hook);
  }

  private emit(rt: Runtime, event: ConsoleEvent): void {
    for (const hook of this.consoleHooks) hook(rt, event);
  }

  private log(rt: Runtime, line: string): void {
    rt.console.push(line);
    if (rt.console.length > this.options.consoleLimit) rt.console.splice(0, rt.console.length - this.options.consoleLimit);
    this.emit(rt, { kind: 'output', line });
  }

  private daemon(rt: Runtime, line: string): void {
    this.log(rt, `[Pterodactyl Daemon]: ${line}`);
  }

  // -------------------------------------------------------------- install

  /** Wings `POST /api/servers` -> 202, installs in the background (pterodactyl/wings:router/router_system.go). */
  create(server: Server, startOnCompletion: boolean): void {
    const rt = this.runtime(server);
    this.seedFiles(server, rt);
    this.beginInstall(server, startOnCompletion, false);
  }

  beginInstall(server: Server, startOnCompletion: boolean, reinstall: boolean): void {
    const rt = this.runtime(server);
    if (rt.installTimer) clearTimeout(rt.installTimer);
    rt.installTimer = null;
    if (rt.power !== 'offline') this.kill(server);
    const finish = () => {
      if (rt.installTimer) clearTimeout(rt.installTimer);
      rt.installTimer = null;
      rt.endInstall = null;
      const current = this.state.servers.get(server.id);
      if (this.closed || !current) return;
      let ok = true;
      if (this.failInstalls > 0) {
        this.failInstalls--;
        ok = false;
      }
      // ServerInstallController: success -> null, failure -> install_failed /
      // reinstall_failed, but a suspended server stays suspended.
      let status: Server['status'] = ok ? null : reinstall ? 'reinstall_failed' : 'install_failed';
      if (current.status === 'suspended') status = 'suspended';
      current.status = status;
      current.installed_at = new Date();
      current.updated_at = new Date();
      if (ok && startOnCompletion && status === null) this.power(current, 'start');
    };
    rt.endInstall = finish;
    if (!this.options.holdInstalls) rt.installTimer = this.schedule(finish, this.options.installMs);
  }

  /**
   * Wings `POST /api/servers/{uuid}/reinstall`: 409 while a power action runs (its power lock is
   * held: starting or stopping), else the install starts again (pterodactyl/wings:router/router_server.go).
   */
  reinstall(server: Server): void {
    if (this.runtime(server).endTransition !== null) {
      throw new WingsError(409, 'Cannot execute server reinstall event while another power action is running.');
    }
    this.beginInstall(server, false, true);
  }

  /** Test control: ends the server's install now (held or still timed); false when none runs. */
  endInstall(server: Server): boolean {
    const end = this.runtimes.get(server.id)?.endInstall;
    end?.();
    return end !== undefined && end !== null;
  }

  /** Test control: ends the server's power transition (starting -> running, stopping -> offline) now; false when none runs. */
  endTransition(server: Server): boolean {
    const end = this.runtimes.get(server.id)?.endTransition;
    end?.();
    return end !== undefined && end !== null;
  }

  /** starting -> running and stopping -> offline: after `transitionMs`, or when a test ends a held one. */
  private afterTransition(rt: Runtime, fn: () => void): void {
    if (rt.timer) clearTimeout(rt.timer);
    const done = () => {
      if (rt.timer) clearTimeout(rt.timer);
      rt.timer = null;
      rt.endTransition = null;
      if (!this.closed) fn();
    };
    rt.endTransition = done;
    rt.timer = this.options.holdTransitions ? null : this.schedule(done, this.options.transitionMs);
  }

  private seedFiles(server: Server, rt: Runtime): void {
    const egg = this.state.eggs.get(server.egg_id);
    const alloc = this.state.allocations.get(server.allocation_id);
    if (!egg) return;
    for (const [path, content] of Object.entries(egg.sim.files)) {
      const text = content
        .replaceAll('{{SERVER_PORT}}', String(alloc?.port ?? 25565))
        .replaceAll('{{SERVER_IP}}', alloc?.ip ?? '0.0.0.0')
        .replaceAll('{{SERVER_NAME}}', server.name)
        .replaceAll('{{SERVER_UUID}}', server.uuid);
      if (path.endsWith('/')) this.mkdirp(rt, normalizePath(path));
      else this.writeFile(server, path, Buffer.from(text), true);
    }
  }

  remove(server: Server): void {
    const rt = this.runtimes.get(server.id);
    if (rt) {
      if (rt.timer) clearTimeout(rt.timer);
      if (rt.installTimer) clearTimeout(rt.installTimer);
    }
    this.runtimes.delete(server.id);
  }

  // ---------------------------------------------------------------- power

  /**
   * Wings power actions are accepted (202) and run asynchronously (pterodactyl/wings:router/router_server.go):
   * start on a non-offline server is ignored; stop on offline is a no-op;
   * kill is immediate; restart = stop (if needed) then start.
   */
  power(server: Server, signal: PowerSignal): void {
    const rt = this.runtime(server);
    switch (signal) {
      case 'start':
        if (rt.power !== 'offline') return;
        this.start(server, rt);
        return;
      case 'stop':
        rt.restartPending = false;
        if (rt.power === 'offline' || rt.power === 'stopping') return;
        this.stop(server, rt);
        return;
      case 'restart':
        if (rt.power === 'offline') {
          this.start(server, rt);
          return;
        }
        rt.restartPending = true;
        if (rt.power !== 'stopping') this.stop(server, rt);
        return;
      case 'kill':
        this.kill(server);
        return;
    }
  }

  kill(server: Server): void {
    const rt = this.runtime(server);
    if (rt.timer) clearTimeout(rt.timer);
    rt.timer = null;
    rt.endTransition = null;
    rt.restartPending = false;
    if (rt.power !== 'offline') this.setOffline(server, rt);
  }

  private setState(rt: Runtime, state: PowerState): void {
    const changed = rt.power !== state;
    rt.power = state;
    rt.resourceCache = null;
    if (changed) this.emit(rt, { kind: 'status', state });
  }

  private start(server: Server, rt: Runtime): void {
    const egg = this.state.eggs.get(server.egg_id);
    this.setState(rt, 'starting');
    rt.startedAt = Date.now();
    this.daemon(rt, 'Checking server disk space usage, this could take a few seconds...');
    this.daemon(rt, 'Updating process configuration files...');
    this.daemon(rt, 'Ensuring file permissions are set correctly, this could take a few seconds...');
    // Wings asks the panel for the server's configuration before every start, so a startup-variable
    // change shows here: in the command line, and in the game's own boot lines that name a variable.
    this.log(rt, `container@pterodactyl~ ${this.state.invocation(server)}`);
    const env = this.state.environment(server);
    for (const l of egg?.sim.boot ?? []) this.log(rt, `[${clock()} INFO]: ${withEnvironment(l, env)}`);
    this.afterTransition(rt, () => {
      this.setState(rt, 'running');
      if (egg) this.log(rt, `[${clock()} INFO]: ${egg.sim.done}`);
    });
  }

  private stop(server: Server, rt: Runtime): void {
    const egg = this.state.eggs.get(server.egg_id);
    if (rt.timer) clearTimeout(rt.timer);
    this.setState(rt, 'stopping');
    // Wings sends the egg's stop command to the process (config.stop).
    if (egg) this.log(rt, `> ${egg.config.stop}`);
    for (const l of egg?.sim.stopping ?? []) this.log(rt, `[${clock()} INFO]: ${l}`);
    this.afterTransition(rt, () => this.setOffline(server, rt));
  }

  private setOffline(server: Server, rt: Runtime): void {
    this.setState(rt, 'offline');
    rt.startedAt = null;
    if (rt.restartPending) {
      rt.restartPending = false;
      const current = this.state.servers.get(server.id);
      if (current) this.start(current, rt);
    }
  }

  /** Wings `POST /api/servers/{uuid}/commands`: 502 unless the container runs. */
  command(server: Server, command: string): void {
    const rt = this.runtime(server);
    if (rt.power === 'offline') throw new WingsError(502, 'Cannot send commands to a stopped server instance.');
    rt.commands.push(command);
    this.log(rt, `> ${command}`);
  }

  // ------------------------------------------------------------ resources

  diskBytes(rt: Runtime): number {
    let total = 0;
    for (const e of rt.files.values()) if (e.type === 'file') total += e.content.length;
    return total;
  }

  /** Wings `GET /api/servers/{uuid}`; the panel caches it 20 s per server. */
  stats(server: Server): Stats {
    const rt = this.runtime(server);
    const now = Date.now();
    if (rt.resourceCache && this.options.resourcesCacheMs > 0 && now - rt.resourceCache.at < this.options.resourcesCacheMs) {
      return rt.resourceCache.value;
    }
    const value = this.computeStats(server, rt, now);
    rt.resourceCache = { at: now, value };
    return value;
  }

  computeStats(server: Server, rt: Runtime, now = Date.now()): Stats {
    const egg = this.state.eggs.get(server.egg_id);
    const disk = this.diskBytes(rt);
    const base: Stats = {
      current_state: rt.power,
      is_suspended: server.status === 'suspended',
      resources: { memory_bytes: 0, cpu_absolute: 0, disk_bytes: disk, network_rx_bytes: 0, network_tx_bytes: 0, uptime: 0 },
    };
    // Wings zeroes memory/cpu/network/uptime when offline; disk usage is kept.
    if (rt.power === 'offline' || rt.startedAt === null) return base;
    const uptime = Math.max(1, now - rt.startedAt);
    const limitBytes = server.memory > 0 ? server.memory * 1_000_000 : Number.POSITIVE_INFINITY;
    const wave = (Math.sin(now / 1700) + 1) / 2;
    const wantMiB = (egg?.sim.baseMemoryMiB ?? 256) * (rt.power === 'starting' ? 0.6 : 1) * (0.9 + 0.2 * wave);
    const memory = Math.floor(Math.min(limitBytes * 0.95, wantMiB * 1024 * 1024));
    const cpuCap = server.cpu > 0 ? server.cpu : 400;
    const cpu = Math.min(cpuCap, (rt.power === 'starting' ? 85 : 12) + 10 * wave);
    base.resources = {
      memory_bytes: memory,
      cpu_absolute: Math.round(cpu * 1000) / 1000,
      disk_bytes: disk,
      network_rx_bytes: Math.floor(uptime * 3.1) + 1024,
      network_tx_bytes: Math.floor(uptime * 7.9) + 2048,
      uptime,
    };
    return base;
  }

  // ----------------------------------------------------------- filesystem

  private resolve(path: string): string {
    return normalizePath(path);
  }

  private mkdirp(rt: Runtime, dir: string): void {
    if (dir === '') return;
    const parts = dir.split('/');
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/');
      const e = rt.files.get(p);
      if (e && e.type === 'file') throw new WingsError(400, 'Cannot perform that action: file is not a directory.');
      if (!e) rt.files.set(p, { type: 'dir', content: Buffer.alloc(0), mode: 0o755, created: new Date(), modified: new Date() });
    }
  }

  list(server: Server, directory: string): Array<{ name: string; entry: FsEntry }> {
    const rt = this.runtime(server);
    const dir = this.resolve(directory);
    const d = rt.files.get(dir);
    if (!d) throw new WingsError(404, NOT_FOUND);
    if (d.type !== 'dir') throw new WingsError(400, 'Cannot perform that action: file is not a directory.');
    const out: Array<{ name: string; entry: FsEntry }> = [];
    for (const [p, e] of rt.files) {
      if (p === '' || p === dir) continue;
      const parent = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '';
      if (parent === dir) out.push({ name: p.slice(p.lastIndexOf('/') + 1), entry: e });
    }
    // Wings: directories first, then alphabetical.
    out.sort((a, b) =>
      a.entry.type === b.entry.type ? (a.name < b.name ? -1 : a.name > b.name ? 1 : 0) : a.entry.type === 'dir' ? -1 : 1,
    );
    return out;
  }

  readFile(server: Server, file: string): { name: string; entry: FsEntry } {
    const rt = this.runtime(server);
    const p = this.resolve(file);
    const e = rt.files.get(p);
    if (!e) throw new WingsError(404, NOT_FOUND);
    if (e.type === 'dir') throw new WingsError(400, 'Cannot perform that action: file is a directory.');
    return { name: p.slice(p.lastIndexOf('/') + 1), entry: e };
  }

  /** Wings write: creates parent directories, truncates, mode 0644; checks the disk limit. */
  writeFile(server: Server, file: string, content: Buffer, skipQuota = false): void {
    const rt = this.runtime(server);
    const p = this.resolve(file);
    if (p === '') throw new WingsError(400, 'Cannot perform that action: file is a directory.');
    const existing = rt.files.get(p);
    if (existing && existing.type === 'dir') throw new WingsError(400, 'Cannot perform that action: file is a directory.');
    if (!skipQuota && server.disk > 0) {
      const after = this.diskBytes(rt) - (existing?.content.length ?? 0) + content.length;
      if (after > server.disk * 1024 * 1024) throw new WingsError(400, 'Cannot perform that action: not enough disk space available.');
    }
    const parent = p.includes('/') ? p.slice(0, p.lastIndexOf('/')) : '';
    this.mkdirp(rt, parent);
    const now = new Date();
    rt.files.set(p, { type: 'file', content, mode: 0o644, created: existing?.created ?? now, modified: now });
    rt.resourceCache = null;
  }

  createFolder(server: Server, root: string, name: string): void {
    const rt = this.runtime(server);
    const p = this.resolve(`${root}/${name}`);
    if (rt.files.has(p)) throw new WingsError(400, 'Cannot perform that action: file already exists.');
    this.mkdirp(rt, p);
  }

  rename(server: Server, root: string, from: string, to: string): void {
    const rt = this.runtime(server);
    const src = this.resolve(`${root}/${from}`);
    const dst = this.resolve(`${root}/${to}`);
    if (src === '' || !rt.files.has(src)) throw new WingsError(404, NOT_FOUND);
    if (rt.files.has(dst)) throw new WingsError(400, 'Cannot perform that action: file already exists.');
    const moves: Array<[string, FsEntry]> = [];
    for (const [p, e] of rt.files) if (p === src || p.startsWith(`${src}/`)) moves.push([p, e]);
    const parent = dst.includes('/') ? dst.slice(0, dst.lastIndexOf('/')) : '';
    this.mkdirp(rt, parent);
    for (const [p] of moves) rt.files.delete(p);
    for (const [p, e] of moves) rt.files.set(dst + p.slice(src.length), e);
  }

  /** Wings deletes each path (recursively); missing paths are not an error. */
  deleteFiles(server: Server, root: string, files: string[]): void {
    const rt = this.runtime(server);
    for (const f of files) {
      const p = this.resolve(`${root}/${f}`);
      if (p === '') throw new WingsError(400, 'Cannot delete the root server directory.');
      for (const key of [...rt.files.keys()]) if (key === p || key.startsWith(`${p}/`)) rt.files.delete(key);
    }
    rt.resourceCache = null;
  }

  /** Wings chmod: each mode is octal (else 400), each path must exist (else 404); checked before any changes. */
  chmod(server: Server, root: string, files: Array<{ file: string; mode: string }>): void {
    const rt = this.runtime(server);
    const changes = files.map(({ file, mode }) => {
      if (!/^[0-7]{1,4}$/.test(mode)) throw new WingsError(400, 'Cannot perform that action: file mode is invalid.');
      const entry = rt.files.get(this.resolve(`${root}/${file}`));
      if (!entry) throw new WingsError(404, NOT_FOUND);
      return { entry, mode: Number.parseInt(mode, 8) };
    });
    for (const { entry, mode } of changes) entry.mode = mode;
  }

  // ------------------------------------------------------------------ JWT

  /**
   * NodeJWTService: HS256 keyed with the node's daemon token; iss = panel URL,
   * aud = node connection address, iat, nbf = now - 5 min, exp, jti (claim and
   * header) = md5(user_id . server_uuid), plus user_uuid, user_id, unique_id.
   */
  signJwt(node: PanelNode, claims: Record<string, unknown>, ttlSeconds: number, identifiedBy: string, issuer: string): string {
    const now = Math.floor(Date.now() / 1000);
    const jti = createHash('md5').update(identifiedBy).digest('hex');
    const header = { typ: 'JWT', alg: 'HS256', jti };
    const payload = {
      iss: issuer,
      aud: [nodeConnectionAddress(node)],
      jti,
      iat: now,
      nbf: now - 300,
      exp: now + ttlSeconds,
      ...claims,
      unique_id: randomString(16),
    };
    const signingInput = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
    const sig = createHmac('sha256', node.daemon_token).update(signingInput).digest('base64url');
    return `${signingInput}.${sig}`;
  }

  /** Verify signature (with the token of the node hosting the claimed server) and exp, like Wings. */
  verifyJwt(token: string): Record<string, unknown> | null {
    const parts = token.split('.');
    if (parts.length !== 3) return null;
    const [h, p, s] = parts as [string, string, string];
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
      JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
    } catch {
      return null;
    }
    const server = [...this.state.servers.values()].find((x) => x.uuid === payload.server_uuid);
    const node = server ? this.state.nodes.get(server.node_id) : undefined;
    if (!node) return null;
    const expected = createHmac('sha256', node.daemon_token).update(`${h}.${p}`).digest();
    const given = Buffer.from(s, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    if (typeof payload.exp !== 'number' || payload.exp < Math.floor(Date.now() / 1000)) return null;
    return payload;
  }
}

export function nodeConnectionAddress(node: PanelNode): string {
  return `${node.scheme}://${node.fqdn}:${node.daemon_listen}`;
}

/** Paths are relative to the server root; leading `/` optional; `..` cannot escape. */
export function normalizePath(path: string): string {
  const out: string[] = [];
  for (const seg of path.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      out.pop();
      continue;
    }
    out.push(seg);
  }
  return out.join('/');
}

export function newRequestId(): string {
  return randomUUID();
}

/** A boot line with `{{ENV_NAME}}` replaced by the server's value (as the game would print it). */
function withEnvironment(line: string, env: Record<string, string | number | null>): string {
  return line.replace(/\{\{([A-Z0-9_]+)\}\}/g, (whole, name: string) => (name in env ? String(env[name] ?? '') : whole));
}
