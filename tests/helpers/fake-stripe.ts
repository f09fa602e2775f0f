import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';

/**
 * A local stand-in for Stripe's API, for `STRIPE_API_URL` (stripe-node's `host`/`port`/`protocol` options): the Checkout Sessions
 * and Refunds endpoints with form-encoded bracket parameters, `Idempotency-Key` replay, and failures on demand.
 * Only what our code calls; the webhook side needs no fake (Stripe's library signs test events).
 */
export interface FakeStripe {
  url: string;
  requests: { path: string; params: Record<string, string>; idempotencyKey: string | undefined; authorization: string | undefined }[];
  sessions: Map<string, Record<string, unknown>>;
  /** Refunds created through POST /v1/refunds (each once per idempotency key). */
  refunds: { id: string; amount: number; payment_intent: string; status: string; metadata: Record<string, string> }[];
  failNext(status: number): void;
  close(): Promise<void>;
}

/** `a[b][0][c]=1` → nested objects and arrays. */
function parseForm(body: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const [rawKey, value] of new URLSearchParams(body)) {
    const path = rawKey.replace(/\]/g, '').split('[');
    let node: Record<string, unknown> = root;
    path.forEach((part, i) => {
      if (i === path.length - 1) node[part] = value;
      else {
        node[part] ??= /^\d+$/.test(path[i + 1]!) ? [] : {};
        node = node[part] as Record<string, unknown>;
      }
    });
  }
  return root;
}

export async function startFakeStripe(): Promise<FakeStripe> {
  const requests: FakeStripe['requests'] = [];
  const sessions = new Map<string, Record<string, unknown>>();
  const refunds: FakeStripe['refunds'] = [];
  const replays = new Map<string, string>();
  let failures: number[] = [];
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const key = req.headers['idempotency-key'] as string | undefined;
    const flat = Object.fromEntries(new URLSearchParams(body));
    requests.push({ path: req.url ?? '', params: flat, idempotencyKey: key, authorization: req.headers.authorization });
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json', 'stripe-should-retry': 'false' });
      res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
    };
    const failure = failures.shift();
    if (failure) return send(failure, { error: { type: 'api_error', message: 'Injected failure' } });
    if (req.method === 'POST' && req.url === '/v1/checkout/sessions') {
      if (key && replays.has(key)) return send(200, replays.get(key)!);
      const p = parseForm(body) as {
        line_items: { price_data: { unit_amount: string; currency: string }; quantity: string }[];
        client_reference_id?: string;
        metadata?: Record<string, string>;
        success_url: string;
        expires_at?: string;
      };
      const id = `cs_test_${randomBytes(12).toString('hex')}`;
      const item = p.line_items[0]!;
      const session = {
        id,
        object: 'checkout.session',
        mode: 'payment',
        status: 'open',
        payment_status: 'unpaid',
        amount_total: Number(item.price_data.unit_amount) * Number(item.quantity),
        currency: item.price_data.currency,
        client_reference_id: p.client_reference_id ?? null,
        metadata: p.metadata ?? {},
        success_url: p.success_url,
        expires_at: Number(p.expires_at ?? Math.floor(Date.now() / 1000) + 86_400),
        payment_intent: null,
        url: `https://checkout.stripe.test/c/pay/${id}`,
      };
      sessions.set(id, session);
      const text = JSON.stringify(session);
      if (key) replays.set(key, text);
      return send(200, text);
    }
    if (req.method === 'POST' && req.url === '/v1/refunds') {
      if (key && replays.has(key)) return send(200, replays.get(key)!);
      const p = parseForm(body) as { payment_intent: string; amount: string; metadata?: Record<string, string> };
      const refund = {
        id: `re_test_${randomBytes(12).toString('hex')}`,
        object: 'refund',
        amount: Number(p.amount),
        currency: 'usd',
        payment_intent: p.payment_intent,
        status: 'succeeded',
        metadata: p.metadata ?? {},
      };
      refunds.push(refund);
      const text = JSON.stringify(refund);
      if (key) replays.set(key, text);
      return send(200, text);
    }
    send(404, { error: { type: 'invalid_request_error', message: `No such route ${req.method} ${req.url}` } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    sessions,
    refunds,
    failNext: (status: number) => {
      // One failure: the answer carries `stripe-should-retry: false`, so the client does not retry.
      failures.push(status);
    },
    close: () =>
      new Promise<void>((resolve) => {
        failures = [];
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
