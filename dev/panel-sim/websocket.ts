// The simulated Wings console websocket, served on the simulator's own HTTP server at Wings' path
// `/api/servers/<uuid>/ws` (pterodactyl/wings:router/router.go). Protocol as Wings speaks it
// (pterodactyl/wings:router/websocket/websocket.go, …/listeners.go, …/message.go,
// pterodactyl/wings:router/router_server_ws.go): text frames `{"event", "args"}`, the upgrade refused
// with 403 unless Origin is the panel URL or listed in `allowed_origins`, authentication in-band
// with the panel's JWT (HS256 keyed with the node's daemon token), `auth success`, `status`,
// `console output`, `stats`, `send command`, `set state`, `send logs`, `send stats`,
// `token expiring` / `token expired`, `jwt error`, `daemon error`. As in Wings, an `auth` that does
// not parse or verify gets `daemon error` (with the real reason only for `admin.websocket.errors`),
// a token for another server is accepted and then fails every send with `jwt error`, and once the
// token has expired every event meant for the client is replaced by `jwt error` "jwt: exp claim is
// invalid" (websocket.go::SendJson, ::TokenValid, ::SendErrorJson).
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import type { PanelState, Server } from './state.ts';
import type { ConsoleEvent, PowerSignal, Runtime, Wings } from './wings.ts';

export interface ConsoleSocketOptions {
  /** Wings' `remote` (the panel URL in its config.yml): always an accepted Origin */
  panelUrl(): string;
  /** Wings' `allowed_origins`; `*` accepts any Origin */
  allowedOrigins: string[];
  /** how often `stats` is pushed while the server is not offline (Wings: each Docker stats tick) */
  statsIntervalMs: number;
  /** how often the token's expiry is checked (Wings: every 30 s) */
  tokenCheckMs: number;
  /** lines replayed on `send logs` (Wings' `websocket_log_count`, default 150) */
  logCount: number;
}

export interface ConsoleSockets {
  /** open, upgraded sockets */
  count(): number;
  close(): void;
}

type Claims = Record<string, unknown> & { exp: number; server_uuid?: unknown; permissions?: unknown };

const PATH = /^\/api\/servers\/([0-9a-f-]{36})\/ws$/;

function refuse(socket: Duplex, status: number, reason: string, body: string): void {
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** WebsocketPayload::HasPermission: `*` grants everything except `admin…` permissions. */
function hasPermission(claims: Claims, permission: string): boolean {
  const perms = Array.isArray(claims.permissions) ? (claims.permissions as unknown[]) : [];
  return perms.includes(permission) || (perms.includes('*') && !permission.startsWith('admin'));
}

export function attachConsoleSockets(
  httpServer: HttpServer,
  state: PanelState,
  wings: Wings,
  options: ConsoleSocketOptions,
): ConsoleSockets {
  const bootedAt = Math.floor(Date.now() / 1000);
  const wss = new WebSocketServer({ noServer: true });
  const connections = new Set<Connection>();

  /**
   * An `auth` token as Wings reads it (websocket.go::NewTokenPayload, tokens/parser.go): a token
   * that does not parse or verify is a plain error (`daemon error`), an expired one `expired`, the
   * denylist and the connect permission are jwt errors; the server uuid is not checked here.
   */
  const verify = (
    token: string,
    server: Server,
  ): { claims: Claims } | { daemonError: string } | { jwtError: string } | { expired: true } => {
    const parts = token.split('.');
    if (token === '' || parts.length !== 3) return { daemonError: 'jwt: malformed token' };
    const [h, p, sig] = parts as [string, string, string];
    const node = state.nodes.get(server.node_id);
    if (!node) return { daemonError: 'jwt: HMAC verification failed' };
    const expected = createHmac('sha256', node.daemon_token).update(`${h}.${p}`).digest();
    const given = Buffer.from(sig, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { daemonError: 'jwt: HMAC verification failed' };
    let claims: Claims;
    try {
      claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Claims;
    } catch {
      return { daemonError: 'jwt: malformed token' };
    }
    if (typeof claims.exp !== 'number' || claims.exp <= Math.floor(Date.now() / 1000)) return { expired: true };
    if (typeof claims.iat === 'number' && claims.iat < bootedAt) return { jwtError: 'jwt: created too far in past (denylist)' };
    if (!hasPermission(claims, 'websocket.connect')) return { jwtError: 'jwt: missing connect permission' };
    return { claims };
  };

  class Connection {
    claims: Claims | null = null;
    private timers: NodeJS.Timeout[] = [];
    readonly ws: WebSocket;
    readonly server: Server;
    readonly rt: Runtime;

    constructor(ws: WebSocket, server: Server, rt: Runtime) {
      this.ws = ws;
      this.server = server;
      this.rt = rt;
      ws.on('message', (data, isBinary) => {
        if (isBinary) return;
        let msg: unknown;
        try {
          msg = JSON.parse(data.toString());
        } catch {
          return; // unparseable frames are discarded, the connection stays open
        }
        if (msg && typeof msg === 'object' && typeof (msg as { event?: unknown }).event === 'string') {
          const m = msg as { event: string; args?: unknown };
          const args = Array.isArray(m.args) ? m.args.map((a) => String(a)) : [];
          this.inbound(m.event, args);
        }
      });
      ws.on('close', () => this.dispose());
      ws.on('error', () => this.dispose());
      this.timers.push(
        setInterval(() => {
          if (this.claims && this.rt.power !== 'offline') this.sendStats();
        }, options.statsIntervalMs),
        setInterval(() => this.checkToken(), options.tokenCheckMs),
      );
    }

    dispose(): void {
      for (const t of this.timers) clearInterval(t);
      this.timers = [];
      connections.delete(this);
    }

    /** Raw frame; `args` omitted when empty (router/websocket/message.go). */
    private frame(event: string, args: string[] = []): void {
      if (this.ws.readyState !== WebSocket.OPEN) return;
      this.ws.send(JSON.stringify(args.length > 0 ? { event, args } : { event }));
    }

    /** websocket.go::TokenValid: why the connection's token does not allow sending, or null. */
    tokenError(): string | null {
      const claims = this.claims;
      if (!claims) return 'jwt: no jwt present';
      if (claims.exp <= Math.floor(Date.now() / 1000)) return 'jwt: exp claim is invalid';
      if (typeof claims.iat === 'number' && claims.iat < bootedAt) return 'jwt: created too far in past (denylist)';
      if (!hasPermission(claims, 'websocket.connect')) return 'jwt: missing connect permission';
      if (claims.server_uuid !== this.server.uuid) return 'jwt: server uuid mismatch';
      return null;
    }

    /** SendJson: without a valid token the event is replaced by `jwt error` (the event itself is lost). */
    send(event: string, args: string[] = []): void {
      const error = this.tokenError();
      if (error) this.frame('jwt error', [error]);
      else this.frame(event, args);
    }

    sendStats(): void {
      const s = wings.computeStats(this.server, this.rt).resources;
      const payload = {
        memory_bytes: s.memory_bytes,
        memory_limit_bytes: this.server.memory > 0 ? this.server.memory * 1024 * 1024 : 0,
        cpu_absolute: s.cpu_absolute,
        network: { rx_bytes: s.network_rx_bytes, tx_bytes: s.network_tx_bytes },
        uptime: s.uptime,
        state: this.rt.power,
        disk_bytes: s.disk_bytes,
      };
      this.send('stats', [JSON.stringify(payload)]);
    }

    /**
     * listeners.go::ListenForExpiration: each check sends `token expiring` while ≤ 60 s remain and
     * `token expired` once it has passed, both through SendJson, so the latter arrives as `jwt error`.
     */
    checkToken(): void {
      if (!this.claims) return;
      const left = this.claims.exp - Math.floor(Date.now() / 1000);
      if (left <= 0) this.send('token expired');
      else if (left <= 60) this.send('token expiring');
    }

    consoleEvent(event: ConsoleEvent): void {
      if (!this.claims) return; // the server's events reach a socket once it has authenticated
      if (event.kind === 'output') {
        this.send('console output', [event.line]);
      } else {
        this.send('status', [event.state]);
        if (event.state === 'offline') this.sendStats();
      }
    }

    inbound(event: string, args: string[]): void {
      if (event === 'auth') {
        const result = verify(args.join(''), this.server);
        if ('expired' in result) {
          this.send('token expired');
          return;
        }
        if ('jwtError' in result) {
          this.frame('jwt error', [result.jwtError]);
          return;
        }
        if ('daemonError' in result) {
          // SendErrorJson: the reason only for a token holding admin.websocket.errors.
          const shown =
            this.claims && hasPermission(this.claims, 'admin.websocket.errors')
              ? result.daemonError
              : 'an unexpected error was encountered while handling this request';
          this.frame('daemon error', [`Error Event [${randomUUID()}]: ${shown}`]);
          return;
        }
        const first = this.claims === null;
        this.claims = result.claims;
        this.frame('auth success');
        if (first) {
          this.send('status', [this.rt.power]);
          if (this.rt.power === 'offline') this.sendStats();
        }
        return;
      }
      // HandleInbound: every other event re-checks the token first.
      const error = this.tokenError();
      if (error || !this.claims) {
        this.frame('jwt error', [error ?? 'jwt: no jwt present']);
        return;
      }
      const claims = this.claims;
      const current = state.servers.get(this.server.id);
      if (!current) return;
      switch (event) {
        case 'send command':
          // ignored without the permission or while the process is not up
          if (!hasPermission(claims, 'control.console') || this.rt.power === 'offline' || args[0] === undefined) return;
          wings.command(current, args[0]);
          return;
        case 'set state': {
          const signal = args[0] as PowerSignal;
          const needed: Record<PowerSignal, string> = {
            start: 'control.start',
            stop: 'control.stop',
            kill: 'control.stop',
            restart: 'control.restart',
          };
          if (!(signal in needed) || !hasPermission(claims, needed[signal])) return;
          wings.power(current, signal);
          return;
        }
        case 'send logs':
          if (this.rt.power === 'offline') return;
          for (const line of this.rt.console.slice(-options.logCount)) this.send('console output', [line]);
          return;
        case 'send stats':
          this.sendStats();
          return;
        default:
          return;
      }
    }
  }

  const unsubscribe = wings.onConsole((rt, event) => {
    for (const c of connections) if (c.rt === rt) c.consoleEvent(event);
  });

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const m = PATH.exec(path);
    if (!m) {
      refuse(socket, 404, 'Not Found', 'Not Found\n');
      return;
    }
    // router/websocket/websocket.go::GetHandler: Origin must be the panel URL or an allowed origin.
    const origin = String(req.headers.origin ?? '');
    const allowed = origin === options.panelUrl() || options.allowedOrigins.some((o) => o === '*' || o === origin);
    if (!allowed) {
      refuse(socket, 403, 'Forbidden', 'Forbidden\n');
      return;
    }
    // ServerExists middleware: 404 before upgrading.
    const server = [...state.servers.values()].find((s) => s.uuid === m[1]);
    if (!server) {
      refuse(socket, 404, 'Not Found', '{"error":"The requested resource does not exist on this instance."}');
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      connections.add(new Connection(ws, server, wings.runtime(server)));
    });
  };
  httpServer.on('upgrade', onUpgrade);

  return {
    count: () => connections.size,
    close: () => {
      unsubscribe();
      httpServer.off('upgrade', onUpgrade);
      for (const c of [...connections]) {
        c.dispose();
        c.ws.terminate();
      }
      wss.close();
    },
  };
}
