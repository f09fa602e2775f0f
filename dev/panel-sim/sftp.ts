// The SFTP server each simulated Wings runs, as pterodactyl/wings does (sftp/server.go, sftp/handler.go):
// a login `<panel username>.<server identifier>` with a password is asked of the panel
// (POST /api/remote/sftp/auth with the node's daemon token, over HTTP like Wings), and the session
// serves that server's simulated files (the store the file routes use) within the permissions the
// panel answered. One listener per node, each with its own host key made at start.
import type { AddressInfo } from 'node:net';
import ssh2 from 'ssh2';
import type { Attributes, Connection, FileEntry, SFTPWrapper } from 'ssh2';
import { logActivity } from './activity.ts';
import type { PanelNode, PanelState, Server } from './state.ts';
import { type FsEntry, type Wings, WingsError, normalizePath } from './wings.ts';

const { Server: SshServer, utils } = ssh2;
const { OPEN_MODE, STATUS_CODE } = utils.sftp;

export interface SftpOptions {
  /** Address every node's SFTP listens on, and the nodes' FQDN then (default 127.0.0.1: what a client types). */
  host?: string;
  /** First node's port, the next nodes' the ones after it (default 0: each a free port). */
  port?: number;
}

export interface SftpListeners {
  /** The port each node listens on, by node id (also the node's `daemon_sftp`). */
  ports: Map<number, number>;
  close(): Promise<void>;
}

/** Wings' permission names (sftp/handler.go). */
const READ = 'file.read';
const READ_CONTENT = 'file.read-content';
const CREATE = 'file.create';
const UPDATE = 'file.update';
const DELETE = 'file.delete';

/** Wings refuses, without asking the panel, a username not `<user>.<8 character identifier>`. */
const VALID_USERNAME = /^(.+)\.([a-z0-9]{8})$/i;

interface Session {
  serverUuid: string;
  userUuid: string;
  client: Connection;
}

/** Open sessions by Wings (the simulator), so the panel's deauthorize-user can end them. */
const sessions = new WeakMap<Wings, Set<Session>>();

function sessionsOf(wings: Wings): Set<Session> {
  let s = sessions.get(wings);
  if (!s) {
    s = new Set();
    sessions.set(wings, s);
  }
  return s;
}

/**
 * Wings `POST /api/deauthorize-user` (sent by the panel when a subuser is removed or its permissions
 * change): the user's SFTP sessions on the server end; the next login asks the panel again.
 */
export function deauthorizeSftp(wings: Wings, serverUuid: string, userUuid: string): void {
  for (const s of sessionsOf(wings)) {
    if (s.serverUuid === serverUuid && s.userUuid === userUuid) {
      sessionsOf(wings).delete(s);
      s.client.end();
    }
  }
}

/**
 * Starts one SFTP listener per node of the panel and points each node at it (`fqdn` = the host,
 * `daemon_sftp` = its port): the server's `sftp` view is then what an SFTP client on this machine types.
 */
export async function startSftp(state: PanelState, wings: Wings, panelUrl: () => string, options: SftpOptions): Promise<SftpListeners> {
  const host = options.host ?? '127.0.0.1';
  const ports = new Map<number, number>();
  const servers: InstanceType<typeof SshServer>[] = [];
  const clients = new Set<Connection>();
  let offset = 0;
  for (const node of state.nodes.values()) {
    const hostKey = utils.generateKeyPairSync('ed25519').private;
    const ssh = new SshServer({ hostKeys: [hostKey] }, (client, info) => {
      clients.add(client);
      client.on('close', () => clients.delete(client));
      // A client that drops mid-handshake must not bring the simulator down.
      client.on('error', () => {});
      serveClient(state, wings, node, client, info.ip, panelUrl);
    });
    const wanted = options.port ? options.port + offset : 0;
    offset++;
    const listen = (port: number) =>
      new Promise<void>((resolve, reject) => {
        ssh.once('error', reject);
        ssh.listen(port, host, () => {
          ssh.off('error', reject);
          resolve();
        });
      });
    // A port another program holds must not stop the local stack: that node takes a free one (its
    // `daemon_sftp` follows, so the server's `sftp` view stays what a client types).
    await listen(wanted).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE' || wanted === 0) throw err;
      console.warn(`[panel-sim] SFTP port ${wanted} is in use: node ${node.id} listens on a free port instead`);
      await listen(0);
    });
    const port = (ssh.address() as AddressInfo).port;
    ports.set(node.id, port);
    node.fqdn = host;
    node.daemon_sftp = port;
    servers.push(ssh);
  }
  return {
    ports,
    close: async () => {
      for (const c of clients) c.end();
      await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
  };
}

interface Login {
  server: Server;
  userUuid: string;
  permissions: string[];
  ip: string;
}

function serveClient(state: PanelState, wings: Wings, node: PanelNode, client: Connection, ip: string, panelUrl: () => string): void {
  let login: Login | undefined;
  client.on('authentication', (ctx) => {
    if (ctx.method !== 'password') {
      ctx.reject(['password']);
      return;
    }
    if (!VALID_USERNAME.test(ctx.username)) {
      ctx.reject(['password']);
      return;
    }
    void askPanel(state, node, panelUrl(), ctx.username, ctx.password, ip).then(
      (answer) => {
        if (!answer) return ctx.reject(['password']);
        login = answer;
        ctx.accept();
      },
      () => ctx.reject(['password']),
    );
  });
  client.on('ready', () => {
    const current = login;
    if (!current) return client.end();
    const session: Session = { serverUuid: current.server.uuid, userUuid: current.userUuid, client };
    sessionsOf(wings).add(session);
    client.on('close', () => sessionsOf(wings).delete(session));
    client.on('session', (acceptSession) => {
      acceptSession().on('sftp', (acceptSftp) => serveFiles(state, wings, current, acceptSftp()));
    });
  });
}

/** Wings' login check: the panel decides (403/409/429: refused), and the server must be one of this node's. */
async function askPanel(
  state: PanelState,
  node: PanelNode,
  panelUrl: string,
  username: string,
  password: string,
  ip: string,
): Promise<Login | undefined> {
  const res = await fetch(`${panelUrl}/api/remote/sftp/auth`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${node.daemon_token_id}.${node.daemon_token}`,
      'content-type': 'application/json',
      accept: 'application/json',
    },
    body: JSON.stringify({ type: 'password', username, password, ip }),
  });
  if (res.status !== 200) return undefined;
  const body = (await res.json()) as { user: string; server: string; permissions: string[] };
  const server = [...state.servers.values()].find((s) => s.uuid === body.server && s.node_id === node.id);
  return server ? { server, userUuid: body.user, permissions: body.permissions, ip } : undefined;
}

interface FileHandle {
  kind: 'file';
  path: string;
  content: Buffer;
  writable: boolean;
}
interface DirHandle {
  kind: 'dir';
  path: string;
  done: boolean;
}

/** The SFTP requests Wings answers (sftp/handler.go: Fileread, Filewrite, Filecmd, Filelist), on the simulated files. */
function serveFiles(state: PanelState, wings: Wings, login: Login, sftp: SFTPWrapper): void {
  const handles = new Map<number, FileHandle | DirHandle>();
  let nextHandle = 0;
  const can = (permission: string) => login.permissions.includes('*') || login.permissions.includes(permission);
  /** The server as it is now (deleted: every request fails). */
  const server = () => state.servers.get(login.server.id);
  const files = () => wings.runtime(login.server).files;
  const open = (h: FileHandle | DirHandle): Buffer => {
    const id = nextHandle++;
    handles.set(id, h);
    const buf = Buffer.alloc(4);
    buf.writeUInt32BE(id);
    return buf;
  };
  /** Wings reports SFTP changes to the panel's activity log (`server:sftp.*`, properties `files`). */
  const record = (s: Server, event: string, files: unknown[]) => {
    const user = [...state.users.values()].find((u) => u.uuid === login.userUuid) ?? null;
    logActivity(state, s, `server:sftp.${event}`, { user, apiKey: null, ip: login.ip }, { files, using_sftp: true });
  };
  const handleOf = (buf: Buffer) => (buf.length === 4 ? handles.get(buf.readUInt32BE(0)) : undefined);
  const denied = (id: number) => sftp.status(id, STATUS_CODE.PERMISSION_DENIED, 'Permission denied');
  const missing = (id: number) => sftp.status(id, STATUS_CODE.NO_SUCH_FILE, 'No such file');
  const ok = (id: number) => sftp.status(id, STATUS_CODE.OK);
  const failed = (id: number, err: unknown) =>
    err instanceof WingsError && err.status === 404
      ? missing(id)
      : sftp.status(id, STATUS_CODE.FAILURE, err instanceof Error ? err.message : 'Failure');
  /** Runs a request against a server that still exists; a store error becomes its SFTP status. */
  const run = (id: number, fn: (s: Server) => void) => {
    const s = server();
    if (!s) return sftp.status(id, STATUS_CODE.FAILURE, 'The server no longer exists.');
    try {
      fn(s);
    } catch (err) {
      failed(id, err);
    }
  };

  sftp.on('REALPATH', (id, path) => {
    const p = `/${normalizePath(path)}`;
    sftp.name(id, [{ filename: p, longname: p, attrs: attrsOf(files().get(normalizePath(path))) }]);
  });
  const stat = (id: number, path: string) => {
    if (!can(READ)) return denied(id);
    const e = files().get(normalizePath(path));
    if (!e) return missing(id);
    sftp.attrs(id, attrsOf(e));
  };
  sftp.on('STAT', stat);
  sftp.on('LSTAT', stat);

  sftp.on('OPENDIR', (id, path) => {
    if (!can(READ)) return denied(id);
    const p = normalizePath(path);
    const e = files().get(p);
    if (!e) return missing(id);
    if (e.type !== 'dir') return sftp.status(id, STATUS_CODE.FAILURE, 'Not a directory');
    sftp.handle(id, open({ kind: 'dir', path: p, done: false }));
  });
  sftp.on('READDIR', (id, buf) => {
    const h = handleOf(buf);
    if (h?.kind !== 'dir') return sftp.status(id, STATUS_CODE.FAILURE, 'Bad handle');
    if (h.done) return sftp.status(id, STATUS_CODE.EOF);
    h.done = true;
    run(id, (s) =>
      sftp.name(
        id,
        wings.list(s, h.path).map(({ name, entry }) => fileEntry(name, entry)),
      ),
    );
  });

  sftp.on('OPEN', (id, path, flags) => {
    const p = normalizePath(path);
    const existing = files().get(p);
    if (!(flags & OPEN_MODE.WRITE)) {
      // Reading a file's content is `file.read-content`.
      if (!can(READ_CONTENT)) return denied(id);
      if (!existing) return missing(id);
      if (existing.type === 'dir') return sftp.status(id, STATUS_CODE.FAILURE, 'Is a directory');
      return sftp.handle(id, open({ kind: 'file', path: p, content: existing.content, writable: false }));
    }
    // Writing: an existing file needs `file.update`, a new one `file.create`.
    if (!can(existing ? UPDATE : CREATE)) return denied(id);
    if (!existing && !(flags & OPEN_MODE.CREAT)) return missing(id);
    if (existing && flags & OPEN_MODE.EXCL) return sftp.status(id, STATUS_CODE.FAILURE, 'File exists');
    if (existing?.type === 'dir') return sftp.status(id, STATUS_CODE.FAILURE, 'Is a directory');
    const content = existing && !(flags & OPEN_MODE.TRUNC) ? Buffer.from(existing.content) : Buffer.alloc(0);
    run(id, (s) => {
      // Like Wings, the file exists from the open on.
      if (!existing || flags & OPEN_MODE.TRUNC) wings.writeFile(s, p, content);
      sftp.handle(id, open({ kind: 'file', path: p, content, writable: true }));
      record(s, existing ? 'write' : 'create', [`/${p}`]);
    });
  });
  sftp.on('READ', (id, buf, offset, length) => {
    const h = handleOf(buf);
    if (h?.kind !== 'file') return sftp.status(id, STATUS_CODE.FAILURE, 'Bad handle');
    if (offset >= h.content.length) return sftp.status(id, STATUS_CODE.EOF);
    sftp.data(id, h.content.subarray(offset, offset + length));
  });
  sftp.on('WRITE', (id, buf, offset, data) => {
    const h = handleOf(buf);
    if (h?.kind !== 'file' || !h.writable) return sftp.status(id, STATUS_CODE.FAILURE, 'Bad handle');
    const end = offset + data.length;
    if (end > h.content.length) {
      const grown = Buffer.alloc(end);
      h.content.copy(grown);
      h.content = grown;
    }
    data.copy(h.content, offset);
    ok(id);
  });
  sftp.on('FSTAT', (id, buf) => {
    const h = handleOf(buf);
    if (!h) return sftp.status(id, STATUS_CODE.FAILURE, 'Bad handle');
    sftp.attrs(id, attrsOf(files().get(h.path)));
  });
  sftp.on('CLOSE', (id, buf) => {
    const h = handleOf(buf);
    if (!h) return sftp.status(id, STATUS_CODE.FAILURE, 'Bad handle');
    handles.delete(buf.readUInt32BE(0));
    if (h.kind !== 'file' || !h.writable) return ok(id);
    // The written content reaches the store (and its disk limit) when the file is closed.
    run(id, (s) => {
      wings.writeFile(s, h.path, h.content);
      ok(id);
    });
  });

  sftp.on('MKDIR', (id, path) => {
    if (!can(CREATE)) return denied(id);
    run(id, (s) => {
      wings.createFolder(s, '', path);
      record(s, 'create-directory', [`/${normalizePath(path)}`]);
      ok(id);
    });
  });
  const remove = (kind: FsEntry['type']) => (id: number, path: string) => {
    if (!can(DELETE)) return denied(id);
    const e = files().get(normalizePath(path));
    if (!e) return missing(id);
    if (e.type !== kind) return sftp.status(id, STATUS_CODE.FAILURE, kind === 'dir' ? 'Not a directory' : 'Is a directory');
    run(id, (s) => {
      wings.deleteFiles(s, '', [path]);
      record(s, 'delete', [`/${normalizePath(path)}`]);
      ok(id);
    });
  };
  sftp.on('REMOVE', remove('file'));
  sftp.on('RMDIR', remove('dir'));
  sftp.on('RENAME', (id, from, to) => {
    if (!can(UPDATE)) return denied(id);
    run(id, (s) => {
      wings.rename(s, '', from, to);
      record(s, 'rename', [{ from: `/${normalizePath(from)}`, to: `/${normalizePath(to)}` }]);
      ok(id);
    });
  });
  const setstat = (id: number, path: string, attrs: Attributes) => {
    if (!can(UPDATE)) return denied(id);
    const e = files().get(normalizePath(path));
    if (!e) return missing(id);
    if (typeof attrs.mode === 'number') e.mode = attrs.mode & 0o7777;
    ok(id);
  };
  sftp.on('SETSTAT', setstat);
  sftp.on('FSETSTAT', (id, buf, attrs) => {
    const h = handleOf(buf);
    if (!h) return sftp.status(id, STATUS_CODE.FAILURE, 'Bad handle');
    setstat(id, h.path, attrs);
  });
  // Links are not offered (Wings refuses symlinks that leave the server's root; the simulator has none).
  sftp.on('READLINK', (id) => sftp.status(id, STATUS_CODE.OP_UNSUPPORTED));
  sftp.on('SYMLINK', (id) => sftp.status(id, STATUS_CODE.OP_UNSUPPORTED));
}

const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;

function attrsOf(e: FsEntry | undefined): Attributes {
  const mtime = Math.floor((e?.modified.getTime() ?? Date.now()) / 1000);
  return {
    mode: (e?.type === 'file' ? S_IFREG : S_IFDIR) | (e?.mode ?? 0o755),
    uid: 988,
    gid: 988,
    size: e?.type === 'file' ? e.content.length : 4096,
    atime: mtime,
    mtime,
  };
}

function fileEntry(name: string, e: FsEntry): FileEntry {
  const attrs = attrsOf(e);
  const kind = e.type === 'dir' ? 'd' : '-';
  const bits = (e.mode & 0o777).toString(2).padStart(9, '0');
  const rwx = [...bits].map((b, i) => (b === '1' ? 'rwx'[i % 3] : '-')).join('');
  const date = e.modified.toUTCString().slice(5, 16);
  return { filename: name, longname: `${kind}${rwx} 1 container container ${attrs.size} ${date} ${name}`, attrs };
}
