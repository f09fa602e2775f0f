/**
 * A server's console: the Wings websocket as docs/api.md (Console) describes it. Credentials come
 * from GET /v1/servers/:id/console; the socket is authenticated in-band (`auth`), renewed on the
 * same socket when Wings says `token expiring` (or, once too late, `token expired` / `jwt error`),
 * and reopened with backoff when it closes. No DOM here: the tab draws what `onEvent` reports.
 */
export interface ConsoleCredentials {
  socket: string;
  token: string;
}

export type ConsoleState = 'connecting' | 'connected' | 'disconnected';

export interface ConsoleSocketOptions {
  /** Fresh credentials (the API call); a rejection is reported through `onError` and retried. */
  credentials: () => Promise<ConsoleCredentials>;
  /** Every Wings event but the protocol's own (auth and token ones), with its arguments. */
  onEvent: (event: string, args: string[]) => void;
  onState: (state: ConsoleState, detail?: { retryInMs?: number }) => void;
  /** Authenticated and about to ask for the history (`send logs`): clear what is shown, it is replayed. */
  onReplay?: () => void;
  onError?: (error: unknown) => void;
  /** Backoff before reconnect attempt n (1, 2, …); default 1 s doubling to 30 s. */
  backoffMs?: (attempt: number) => number;
}

const PROTOCOL_EVENTS = new Set(['auth success', 'token expiring', 'token expired', 'jwt error']);

export class ConsoleSocket {
  private ws: WebSocket | null = null;
  private closed = false;
  private attempt = 0;
  private retry: ReturnType<typeof setTimeout> | undefined;
  private renewing = false;
  /** Events were lost (an expired token replaces them by `jwt error`): replay the logs at the next auth. */
  private lost = true;
  private lastRenewal = 0;
  private state: ConsoleState = 'disconnected';
  private readonly options: ConsoleSocketOptions;

  constructor(options: ConsoleSocketOptions) {
    this.options = options;
  }

  start(): void {
    this.closed = false;
    void this.connect();
  }

  /** Sends an event when authenticated; answers whether it was sent. */
  send(event: string, args: string[] = []): boolean {
    if (this.state !== 'connected' || this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify({ event, args }));
    return true;
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.retry);
    const ws = this.ws;
    this.ws = null;
    ws?.close();
    this.setState('disconnected');
  }

  private setState(state: ConsoleState, detail?: { retryInMs?: number }): void {
    this.state = state;
    this.options.onState(state, detail);
  }

  private async connect(): Promise<void> {
    this.setState('connecting');
    let credentials: ConsoleCredentials;
    try {
      credentials = await this.options.credentials();
    } catch (error) {
      this.options.onError?.(error);
      this.scheduleReconnect();
      return;
    }
    if (this.closed) return;
    const ws = new WebSocket(credentials.socket);
    this.ws = ws;
    this.lost = true;
    ws.onopen = () => ws.send(JSON.stringify({ event: 'auth', args: [credentials.token] }));
    ws.onmessage = (message) => {
      if (this.ws !== ws) return;
      let frame: { event?: unknown; args?: unknown };
      try {
        frame = JSON.parse(String(message.data));
      } catch {
        return;
      }
      if (typeof frame.event !== 'string') return;
      const args = Array.isArray(frame.args) ? frame.args.map(String) : [];
      this.receive(frame.event, args);
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.ws = null;
      this.scheduleReconnect();
    };
  }

  private receive(event: string, args: string[]): void {
    if (event === 'auth success') {
      this.attempt = 0;
      const first = this.state !== 'connected';
      this.setState('connected');
      if (first || this.lost) {
        this.lost = false;
        this.options.onReplay?.();
        this.send('send logs');
      }
    } else if (event === 'token expiring') {
      // Wings repeats it every check until the new token is in: one renewal per 10 s is enough.
      if (Date.now() - this.lastRenewal >= 10_000) void this.renew();
    } else if (event === 'token expired' || event === 'jwt error') {
      this.lost = true;
      // A token Wings will never take (another server's) would loop: renew at most every 5 s.
      if (Date.now() - this.lastRenewal >= 5_000) void this.renew();
    }
    if (!PROTOCOL_EVENTS.has(event)) this.options.onEvent(event, args);
  }

  /** Fresh credentials, sent as a new `auth` on the open socket (it stays open meanwhile). */
  private async renew(): Promise<void> {
    if (this.renewing) return;
    this.renewing = true;
    this.lastRenewal = Date.now();
    const ws = this.ws;
    try {
      const { token } = await this.options.credentials();
      if (ws && this.ws === ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ event: 'auth', args: [token] }));
    } catch (error) {
      this.options.onError?.(error);
    } finally {
      this.renewing = false;
    }
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    this.attempt++;
    const delay = (this.options.backoffMs ?? defaultBackoff)(this.attempt);
    this.setState('disconnected', { retryInMs: delay });
    clearTimeout(this.retry);
    this.retry = setTimeout(() => void this.connect(), delay);
  }
}

/** 1 s, 2 s, 4 s … 30 s, with up to 20 % jitter so many tabs do not reconnect at once. */
export function defaultBackoff(attempt: number): number {
  const base = Math.min(30_000, 1_000 * 2 ** (attempt - 1));
  return Math.round(base * (1 + Math.random() * 0.2));
}
