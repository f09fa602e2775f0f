import { startLocalStack, type LocalStack, type LocalStackOptions } from '../../dev/stack.ts';
import { installTestClock, type TestClock } from './clock.ts';

/**
 * The local stack for one test file: the shared DynamoDB Local from global-setup, this file's own
 * table (tests/setup.ts), the API on a free port, a small client for it, and the clock its rate
 * limit and panel call budget count minutes by (tests/helpers/clock.ts).
 */
export interface TestApi extends LocalStack {
  call(method: string, path: string, options?: CallOptions): Promise<ApiResponse>;
  session(email: string): Promise<string>;
  clock: TestClock;
}

export interface CallOptions {
  token?: string | null;
  body?: unknown;
  /** Sent as is, not JSON-encoded. */
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export async function startTestApi(
  options: Pick<LocalStackOptions, 'localAdminApiKey' | 'panel' | 'webhooks' | 'repairs' | 'mail' | 'dns'> = {},
): Promise<TestApi> {
  // Lowered for tests: the simulators install in well under a second and tests poll
  // GET /v1/servers/:id until `installed` for a few seconds; the production 5 s interval for a
  // server that is installing (shared/servers/live.ts) would outlast that. A file that sets it keeps its value.
  process.env.LIVE_STATE_TRANSITION_TTL_MS ??= '50';
  const stack = await startLocalStack({
    dynamodbEndpoint: process.env.DYNAMODB_ENDPOINT!,
    tableName: process.env.TABLE_NAME!,
    adminEmails: (process.env.ADMIN_EMAILS ?? 'admin@localhost').split(','),
    // The webhook dispatcher runs as under npm start; `webhooks: false` for a file that moves its clock itself.
    webhooks: {},
    // The pending-repair pass runs as under npm start (every minute); a file may choose its interval or `false`.
    // Without the install watch: its server.installed events would join the event lists files assert
    // exactly (tests/integration/install-events.test.ts runs it).
    // Without the Stripe event reconciliation either: a file that records Stripe events runs it itself.
    repairs: { installWatch: false, stripeEvents: false },
    // The local SMTP server on a free port, its messages in a temporary folder (`stack.mail.dir`), and the sender.
    mail: {},
    // The local DNS server of the subdomains' zone on a free port (`stack.dns.port`).
    dns: {},
    ...options,
  });
  const call = async (method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse> => {
    const token = opts.token === undefined ? stack.adminApiKey : opts.token;
    const headers: Record<string, string> = { ...opts.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${stack.baseUrl}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, headers: res.headers, body: parsed, text };
  };
  const clock = installTestClock();
  return {
    ...stack,
    clock,
    stop: async () => {
      clock.release();
      await stack.stop();
    },
    call,
    session: async (email: string) => {
      const res = await call('POST', '/dev/session', { token: null, body: { email } });
      if (res.status !== 200) throw new Error(`session failed: ${res.text}`);
      return res.body.token as string;
    },
  };
}

/** The error envelope, asserted whole: a code, a message, nothing else but optional details. */
export function expectEnvelope(res: ApiResponse, status: number, code: string): void {
  if (res.status !== status || res.body?.error?.code !== code || typeof res.body?.error?.message !== 'string') {
    throw new Error(`expected ${status} ${code}, got ${res.status} ${res.text}`);
  }
  const extra = Object.keys(res.body).filter((k) => k !== 'error');
  const extraInError = Object.keys(res.body.error).filter((k) => !['code', 'message', 'details'].includes(k));
  if (extra.length || extraInError.length) throw new Error(`envelope has extra keys: ${res.text}`);
}
