import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConsoleSocket, type ConsoleState } from '../../web/src/pages/server/console-socket.ts';

/**
 * The dashboard's console client (web/src/pages/server/console-socket.ts) against a scripted
 * websocket: Wings' protocol as docs/api.md (Console) states it — auth on open, `send logs` after
 * `auth success`, a fresh `auth` on the same socket on `token expiring` or `jwt error`, and a
 * reconnect with fresh credentials (after a backoff) when the socket closes. The real simulator is
 * exercised end to end by the browser tests.
 */
class FakeSocket {
  static OPEN = 1;
  static all: FakeSocket[] = [];
  readyState = 0;
  sent: { event: string; args: string[] }[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((m: { data: string }) => void) | null = null;
  onclose: (() => void) | null = null;
  readonly url: string;
  constructor(url: string) {
    this.url = url;
    FakeSocket.all.push(this);
  }
  send(data: string) {
    this.sent.push(JSON.parse(data));
  }
  close() {
    this.readyState = 3;
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  receive(event: string, args?: string[]) {
    this.onmessage?.({ data: JSON.stringify(args ? { event, args } : { event }) });
  }
  drop() {
    this.readyState = 3;
    this.onclose?.();
  }
  events() {
    return this.sent.map((f) => (f.event === 'auth' ? `auth ${f.args[0]}` : f.event));
  }
}

const flush = () => vi.advanceTimersByTimeAsync(0);

function setup(options: { failFirst?: boolean } = {}) {
  let n = 0;
  const states: string[] = [];
  const events: string[] = [];
  const errors: unknown[] = [];
  let replays = 0;
  const credentials = vi.fn(async () => {
    n++;
    if (options.failFirst && n === 1) throw new Error('409 conflict');
    return { socket: `ws://wings/${n}`, token: `t${n}` };
  });
  const socket = new ConsoleSocket({
    credentials,
    onState: (s: ConsoleState, d) => states.push(d?.retryInMs ? `${s} ${d.retryInMs}` : s),
    onEvent: (e, a) => events.push(`${e} ${a.join(' ')}`.trim()),
    onReplay: () => replays++,
    onError: (e) => errors.push(e),
    backoffMs: (attempt) => attempt * 1000,
  });
  return { socket, credentials, states, events, errors, replays: () => replays };
}

beforeEach(() => {
  vi.useFakeTimers();
  FakeSocket.all = [];
  vi.stubGlobal('WebSocket', FakeSocket);
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('console socket', () => {
  it('authenticates on open, asks for the logs once authenticated, and passes the events on', async () => {
    const c = setup();
    c.socket.start();
    await flush();
    const ws = FakeSocket.all[0]!;
    expect(ws.url).toBe('ws://wings/1');
    expect(c.states).toEqual(['connecting']);
    expect(c.socket.send('send command', ['say hi'])).toBe(false); // not authenticated yet
    ws.open();
    expect(ws.events()).toEqual(['auth t1']);
    ws.receive('auth success');
    ws.receive('status', ['running']);
    ws.receive('console output', ['\u001b[32mDone\u001b[0m']);
    expect(c.states).toEqual(['connecting', 'connected']);
    expect(ws.events()).toEqual(['auth t1', 'send logs']);
    expect(c.replays()).toBe(1);
    expect(c.events).toEqual(['status running', 'console output \u001b[32mDone\u001b[0m']);
    expect(c.socket.send('send command', ['say hi'])).toBe(true);
    expect(ws.sent.at(-1)).toEqual({ event: 'send command', args: ['say hi'] });
    c.socket.close();
  });

  it('renews the token on the same socket on `token expiring`, once, without replaying', async () => {
    const c = setup();
    c.socket.start();
    await flush();
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.receive('auth success');
    ws.receive('token expiring');
    ws.receive('token expiring'); // Wings repeats it each check until the new token is in
    await flush();
    ws.receive('token expiring');
    await flush();
    expect(c.credentials).toHaveBeenCalledTimes(2);
    expect(ws.events()).toEqual(['auth t1', 'send logs', 'auth t2']);
    ws.receive('auth success');
    expect(ws.events()).toEqual(['auth t1', 'send logs', 'auth t2']); // nothing was lost: no replay
    expect(c.replays()).toBe(1);
    expect(FakeSocket.all).toHaveLength(1);
    expect(c.states.at(-1)).toBe('connected');
    c.socket.close();
  });

  it('after `jwt error` (the token expired, events were lost) renews and replays the logs', async () => {
    const c = setup();
    c.socket.start();
    await flush();
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.receive('auth success');
    ws.receive('jwt error', ['jwt: exp claim is invalid']);
    ws.receive('jwt error', ['jwt: exp claim is invalid']);
    await flush();
    expect(c.credentials).toHaveBeenCalledTimes(2);
    ws.receive('auth success');
    expect(ws.events()).toEqual(['auth t1', 'send logs', 'auth t2', 'send logs']);
    expect(c.replays()).toBe(2);
    expect(c.events).toEqual([]); // protocol events are not shown as output
    c.socket.close();
  });

  it('reconnects with fresh credentials after a backoff when the socket closes', async () => {
    const c = setup();
    c.socket.start();
    await flush();
    FakeSocket.all[0]!.open();
    FakeSocket.all[0]!.receive('auth success');
    FakeSocket.all[0]!.drop();
    expect(c.states.at(-1)).toBe('disconnected 1000');
    await vi.advanceTimersByTimeAsync(999);
    expect(FakeSocket.all).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(FakeSocket.all).toHaveLength(2);
    const ws = FakeSocket.all[1]!;
    ws.open();
    expect(ws.events()).toEqual(['auth t2']);
    // A socket that never opens backs off further each time.
    ws.drop();
    expect(c.states.at(-1)).toBe('disconnected 2000');
    await vi.advanceTimersByTimeAsync(2000);
    FakeSocket.all[2]!.drop();
    expect(c.states.at(-1)).toBe('disconnected 3000');
    c.socket.close();
  });

  it('reports a credentials failure and tries again later', async () => {
    const c = setup({ failFirst: true });
    c.socket.start();
    await flush();
    expect(c.errors).toHaveLength(1);
    expect(FakeSocket.all).toHaveLength(0);
    expect(c.states).toEqual(['connecting', 'disconnected 1000']);
    await vi.advanceTimersByTimeAsync(1000);
    expect(FakeSocket.all).toHaveLength(1);
    c.socket.close();
  });

  it('close() closes the socket and stops reconnecting', async () => {
    const c = setup();
    c.socket.start();
    await flush();
    const ws = FakeSocket.all[0]!;
    ws.open();
    ws.receive('auth success');
    c.socket.close();
    expect(ws.readyState).toBe(3);
    ws.drop();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(FakeSocket.all).toHaveLength(1);
    expect(c.states.at(-1)).toBe('disconnected');
    expect(c.socket.send('send command', ['x'])).toBe(false);
  });
});
