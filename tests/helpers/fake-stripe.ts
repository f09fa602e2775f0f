import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import stripeParams from './stripe-params.json' with { type: 'json' };

/**
 * A local stand-in for Stripe's API, for `STRIPE_API_URL` (stripe-node's `host`/`port`/`protocol` options): the Checkout Sessions
 * (payment and setup mode), Refunds, Customers, SetupIntents, PaymentIntents (off-session, answered by Stripe's test card
 * names) and PaymentMethod detach endpoints, Stripe Tax's calculations and transactions (fakeStripeTax's fixed rates), with
 * form-encoded bracket parameters, `Idempotency-Key` replay, and failures on demand.
 * Only what our code calls; the webhook side needs no fake (Stripe's library signs test events).
 *
 * Strict as Stripe is (see `refusal` below): an unknown or missing top-level parameter is 400 `parameter_unknown` /
 * `parameter_missing`, checked against the parameters of Stripe's published API description (stripe-params.json, written
 * by dev/stripe-params.ts); an Idempotency-Key reused with other parameters is 400 `idempotency_error`; a confirmed
 * PaymentIntent that may take redirect-based methods needs a `return_url`.
 *
 * Also the webhook endpoints (list, create with its signing secret shown once, update) and the events Stripe would send
 * (`recordEvent`), listed by GET /v1/events as Stripe lists them (newest first, `types[]`, `created[gte]`, `limit`/`starting_after`).
 */
export interface FakeStripe {
  url: string;
  requests: { path: string; params: Record<string, string>; idempotencyKey: string | undefined; authorization: string | undefined }[];
  sessions: Map<string, Record<string, unknown>>;
  /**
   * A payment-mode session as the customer paid it with Stripe Tax on (`automatic_tax`): the billing address in
   * `country`, the tax of fakeStripeTax added to the net; `vatId` given in Checkout's tax id field. The event's object:
   * the breakdown (with its `taxability_reason`) only in the session read back with `expand[]=total_details.breakdown`.
   */
  paidWithStripeTax(sessionId: string, country: string, options?: { vatId?: string }): Record<string, unknown>;
  /** Tax Calculations created (POST /v1/tax/calculations), by id. */
  taxCalculations: Map<string, Record<string, unknown>>;
  /** Tax Transactions created from a calculation (each reference once, as Stripe requires). */
  taxTransactions: { id: string; calculation: string; reference: string }[];
  /** Refunds created through POST /v1/refunds (each once per idempotency key). */
  refunds: { id: string; amount: number; payment_intent: string; status: string; metadata: Record<string, string> }[];
  customers: { id: string; email: string; metadata: Record<string, string> }[];
  /** SetupIntents of setup sessions; a test chooses the card the customer saved (`payment_method`). */
  setupIntents: Map<string, { id: string; payment_method: string | null }>;
  /** PaymentIntents created (once per idempotency key), with the status the test card gave them. */
  paymentIntents: {
    id: string;
    amount: number;
    customer: string;
    payment_method: string;
    status: string;
    metadata: Record<string, string>;
  }[];
  detached: string[];
  /** Webhook endpoints, with the signing secret Stripe keeps (and shows only in the create answer). */
  webhookEndpoints: FakeWebhookEndpoint[];
  /** Events Stripe would send, as GET /v1/events lists them; a test delivers one (signed) or never. */
  events: FakeEvent[];
  /** Records the event Stripe would send about `object` (created now, or at `created` seconds). */
  recordEvent(type: string, object: Record<string, unknown>, options?: { created?: number }): FakeEvent;
  /**
   * The next request (to `path` only, when given) answers `status` (Stripe's `error` object: `error`, else an api_error)
   * and does nothing.
   */
  failNext(status: number, error?: { type: string; code?: string; message: string }, path?: string): void;
  /** The next `count` requests are carried out, but their answers are lost (the connection drops). */
  loseAnswers(count: number): void;
  close(): Promise<void>;
}

export interface FakeWebhookEndpoint {
  id: string;
  object: 'webhook_endpoint';
  url: string;
  enabled_events: string[];
  status: 'enabled' | 'disabled';
  description: string | null;
  api_version: string | null;
  secret: string;
}

export interface FakeEvent {
  id: string;
  object: 'event';
  type: string;
  created: number;
  livemode: false;
  api_version: string;
  pending_webhooks: number;
  request: { id: null; idempotency_key: null };
  data: { object: Record<string, unknown> };
}

type Params = Record<string, unknown>;
type StripeError = { type: string; code?: string; param?: string; message: string };

/** The fake's Stripe Tax: fixed rates in basis points by the buyer's country; any other country 0. */
export const FAKE_STRIPE_TAX_RATES: Record<string, number> = { DE: 1900, FR: 2000, NL: 2100, GB: 2000 };
/** The fake account's origin address (Stripe Tax settings, head office). */
export const FAKE_STRIPE_TAX_ORIGIN = 'DE';
const EU = new Set('AT BE BG CY CZ DE DK EE ES FI FR GR HR HU IE IT LT LU LV MT NL PL PT RO SE SI SK'.split(' '));

/**
 * The fake's Stripe Tax on `net` for a buyer in `country`, shared by Checkout's `automatic_tax` and Tax Calculations:
 * an EU business (a tax id given) in another EU country than the origin is a reverse charge; a country without a rate
 * is not collected (the account is not registered there); else the rate, rounded half up as Stripe rounds.
 */
export function fakeStripeTax(net: number, country: string, business: boolean): { tax: number; rate: number; reason: string } {
  if (business && EU.has(country) && country !== FAKE_STRIPE_TAX_ORIGIN) return { tax: 0, rate: 0, reason: 'reverse_charge' };
  const rate = FAKE_STRIPE_TAX_RATES[country];
  if (rate === undefined) return { tax: 0, rate: 0, reason: 'not_collecting' };
  return { tax: Math.round((net * rate) / 10_000), rate, reason: 'standard_rated' };
}

/** Stripe's answer to a tax location it cannot determine (a calculation without a usable address). */
const TAX_LOCATION_INVALID: StripeError = {
  type: 'invalid_request_error',
  code: 'customer_tax_location_invalid',
  param: 'customer_details[address]',
  message: "We could not determine the customer's tax location based on the provided customer address.",
};

/** The endpoint of stripe-params.json a request is for (`{id}` segments matched as ids). */
type Endpoint = { params: string[]; required: string[]; removedSinceSpec: string[] };
function endpointOf(method: string, path: string): Endpoint | undefined {
  const endpoints = stripeParams.endpoints as Record<string, Endpoint>;
  for (const [name, endpoint] of Object.entries(endpoints)) {
    const [m, pattern] = name.split(' ') as [string, string];
    const re = new RegExp(`^${pattern.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (m === method && re.test(path) && !(pattern.includes('{') && path.endsWith('/search'))) return endpoint;
  }
  return undefined;
}

/** What Stripe refuses before it does anything, or undefined. */
function refusal(method: string, path: string, params: Params): StripeError | undefined {
  const endpoint = endpointOf(method, path);
  if (!endpoint) return undefined;
  const unknown = Object.keys(params).find((name) => !endpoint.params.includes(name));
  // The one removed parameter Stripe names apart (changelog 2026-09-30.endive); any other is just unknown.
  if (unknown === 'payment_method_types' && endpoint.removedSinceSpec.includes(unknown))
    return {
      type: 'invalid_request_error',
      code: 'payment_method_types_no_longer_supported',
      param: unknown,
      message: `Received unsupported parameter: ${unknown}`,
    };
  if (unknown)
    return { type: 'invalid_request_error', code: 'parameter_unknown', param: unknown, message: `Received unknown parameter: ${unknown}` };
  const missing = endpoint.required.find((name) => params[name] === undefined);
  if (missing)
    return { type: 'invalid_request_error', code: 'parameter_missing', param: missing, message: `Missing required param: ${missing}.` };
  if (method === 'POST' && path === '/v1/payment_intents') return returnUrlRefusal(params);
  return undefined;
}

/**
 * Stripe's rule for a PaymentIntent confirmed at creation: without `payment_method_types` (older API versions) it takes
 * the methods the Dashboard enables, some of which redirect, so it needs a `return_url` unless redirects are turned off.
 * `allowed_payment_method_types` is not taken as an exemption: Stripe documents none for it, so the fake stays strict.
 */
function returnUrlRefusal(p: Params): StripeError | undefined {
  const automatic = p.automatic_payment_methods as { allow_redirects?: string } | undefined;
  if (p.confirm !== 'true' || p.payment_method_types || automatic?.allow_redirects === 'never' || p.return_url) return undefined;
  return {
    type: 'invalid_request_error',
    message:
      'A `return_url` must be specified because this Payment Intent is configured to automatically accept the payment methods enabled in the Dashboard, some of which may require a full page redirect to succeed. If you do not want to accept redirect-based payment methods, set `automatic_payment_methods[enabled]` to `true` and `automatic_payment_methods[allow_redirects]` to `never` when creating Setup Intents and Payment Intents.',
  };
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

/** Stripe's test PaymentMethods and how an off-session charge of each ends. */
const TEST_CARDS: Record<string, { last4: string; failure: string | null }> = {
  pm_card_visa: { last4: '4242', failure: null },
  pm_card_chargeDeclined: { last4: '0002', failure: 'card_declined' },
  pm_card_authenticationRequired: { last4: '3155', failure: 'authentication_required' },
};

export async function startFakeStripe(): Promise<FakeStripe> {
  const requests: FakeStripe['requests'] = [];
  const sessions = new Map<string, Record<string, unknown>>();
  const refunds: FakeStripe['refunds'] = [];
  const customers: FakeStripe['customers'] = [];
  const setupIntents: FakeStripe['setupIntents'] = new Map();
  const paymentIntents: FakeStripe['paymentIntents'] = [];
  const detached: string[] = [];
  const webhookEndpoints: FakeWebhookEndpoint[] = [];
  const events: FakeEvent[] = [];
  const taxCalculations = new Map<string, Record<string, unknown>>();
  const taxTransactions: FakeStripe['taxTransactions'] = [];
  const replays = new Map<string, string>();
  const failedReplays = new Map<string, string>();
  /** The request each Idempotency-Key was first used with. */
  const keyed = new Map<string, string>();
  let failures: { status: number; error: StripeError; path: string | undefined }[] = [];
  let answersToLose = 0;
  const server: Server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const key = req.headers['idempotency-key'] as string | undefined;
    const [path = '', query = ''] = (req.url ?? '').split('?');
    const flat = Object.fromEntries(new URLSearchParams(req.method === 'GET' ? query : body));
    requests.push({ path: req.url ?? '', params: flat, idempotencyKey: key, authorization: req.headers.authorization });
    const lose = answersToLose > 0;
    if (lose) answersToLose--;
    const send = (status: number, payload: unknown) => {
      if (lose) return void res.destroy();
      res.writeHead(status, { 'content-type': 'application/json', 'stripe-should-retry': 'false' });
      res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
    };
    const failing = failures.findIndex((f) => f.path === undefined || f.path === path);
    const failure = failing < 0 ? undefined : failures.splice(failing, 1)[0];
    if (failure) return send(failure.status, { error: failure.error });
    const refused = refusal(req.method ?? '', path, parseForm(req.method === 'GET' ? query : body));
    if (refused) return send(400, { error: refused });
    if (key && req.method === 'POST') {
      const request = `${path}?${body}`;
      if ((keyed.get(key) ?? request) !== request) {
        const message = `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`;
        return send(400, { error: { type: 'idempotency_error', message } });
      }
      keyed.set(key, request);
    }
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
      if ((p as { mode?: string }).mode === 'setup') {
        const setupIntent = { id: `seti_test_${randomBytes(12).toString('hex')}`, payment_method: null };
        setupIntents.set(setupIntent.id, setupIntent);
        const session = {
          id,
          object: 'checkout.session',
          mode: 'setup',
          status: 'open',
          payment_status: 'no_payment_required',
          amount_total: null,
          currency: (p as { currency?: string }).currency ?? 'usd',
          customer: (p as { customer?: string }).customer ?? null,
          client_reference_id: p.client_reference_id ?? null,
          metadata: p.metadata ?? {},
          success_url: p.success_url,
          setup_intent: setupIntent.id,
          payment_intent: null,
          url: `https://checkout.stripe.test/c/setup/${id}`,
        };
        sessions.set(id, session);
        const text = JSON.stringify(session);
        if (key) replays.set(key, text);
        return send(200, text);
      }
      const item = p.line_items[0]!;
      const subtotal = p.line_items.reduce((total, line) => total + Number(line.price_data.unit_amount) * Number(line.quantity), 0);
      const automaticTax = (p as { automatic_tax?: { enabled?: string } }).automatic_tax?.enabled === 'true';
      const session = {
        id,
        object: 'checkout.session',
        mode: 'payment',
        status: 'open',
        payment_status: 'unpaid',
        amount_subtotal: subtotal,
        // Until the customer gives an address Stripe Tax has no figure: the total is the subtotal.
        amount_total: subtotal,
        total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
        automatic_tax: { enabled: automaticTax, status: automaticTax ? 'requires_location_inputs' : null, liability: null, provider: null },
        customer_details: null,
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
    const sessionId = /^\/v1\/checkout\/sessions\/([^/]+)$/.exec(path)?.[1];
    if (req.method === 'GET' && sessionId) {
      const found = sessions.get(sessionId);
      if (!found) return send(404, { error: { type: 'invalid_request_error', message: `No such checkout.session: '${sessionId}'` } });
      // `total_details.breakdown` is includable: only in an answer that asks for it.
      const expanded = (parseForm(query) as { expand?: string[] }).expand?.includes('total_details.breakdown');
      const { breakdown, ...details } = (found.total_details ?? {}) as { breakdown?: unknown };
      return send(200, { ...found, total_details: found.total_details ? { ...details, ...(expanded ? { breakdown } : {}) } : null });
    }
    if (req.method === 'POST' && path === '/v1/tax/calculations') {
      if (key && replays.has(key)) return send(200, replays.get(key)!);
      const p = parseForm(body) as {
        currency: string;
        line_items: { amount: string; reference?: string; tax_behavior?: string }[];
        customer?: string;
        customer_details?: { address?: { country?: string; postal_code?: string }; tax_ids?: { type: string; value: string }[] };
      };
      // The fake's Customers have no address; a US address needs its ZIP code.
      const address = p.customer_details?.address;
      if (!address?.country || (address.country === 'US' && !address.postal_code)) return send(400, { error: TAX_LOCATION_INVALID });
      const net = p.line_items.reduce((total, line) => total + Number(line.amount), 0);
      const taxed = fakeStripeTax(net, address.country, Boolean(p.customer_details?.tax_ids?.length));
      const calculation = {
        id: `taxcalc_test_${randomBytes(12).toString('hex')}`,
        object: 'tax.calculation',
        amount_total: net + taxed.tax,
        currency: p.currency,
        customer: p.customer ?? null,
        customer_details: {
          address: { city: null, line1: null, line2: null, postal_code: null, state: null, ...address },
          address_source: 'billing',
          ip_address: null,
          tax_ids: p.customer_details?.tax_ids ?? [],
          taxability_override: 'none',
        },
        expires_at: Math.floor(Date.now() / 1000) + 90 * 86_400,
        livemode: false,
        ship_from_details: null,
        shipping_cost: null,
        tax_amount_exclusive: taxed.tax,
        tax_amount_inclusive: 0,
        tax_breakdown: [
          {
            amount: taxed.tax,
            inclusive: false,
            tax_rate_details: {
              country: address.country,
              flat_amount: null,
              percentage_decimal: (taxed.rate / 100).toFixed(4),
              rate_type: 'percentage',
              state: null,
              tax_type: 'vat',
            },
            taxability_reason: taxed.reason,
            taxable_amount: taxed.reason === 'standard_rated' ? net : 0,
          },
        ],
        tax_date: Math.floor(Date.now() / 1000),
      };
      taxCalculations.set(calculation.id, calculation);
      const text = JSON.stringify(calculation);
      if (key) replays.set(key, text);
      return send(200, text);
    }
    if (req.method === 'POST' && path === '/v1/tax/transactions/create_from_calculation') {
      if (key && replays.has(key)) return send(200, replays.get(key)!);
      const p = parseForm(body) as { calculation: string; reference: string };
      const calculation = taxCalculations.get(p.calculation);
      if (!calculation)
        return send(400, {
          error: {
            type: 'invalid_request_error',
            code: 'resource_missing',
            param: 'calculation',
            message: `No such tax calculation: '${p.calculation}'`,
          },
        });
      // Stripe: a reference is unique across all transactions.
      if (taxTransactions.some((t) => t.reference === p.reference))
        return send(400, {
          error: {
            type: 'invalid_request_error',
            param: 'reference',
            message: `A transaction with reference ${p.reference} already exists.`,
          },
        });
      const transaction = { id: `tax_test_${randomBytes(12).toString('hex')}`, calculation: p.calculation, reference: p.reference };
      taxTransactions.push(transaction);
      const text = JSON.stringify({
        ...transaction,
        object: 'tax.transaction',
        created: Math.floor(Date.now() / 1000),
        currency: calculation.currency,
        customer: calculation.customer,
        customer_details: calculation.customer_details,
        livemode: false,
        type: 'transaction',
      });
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
    if (req.method === 'POST' && req.url === '/v1/customers') {
      if (key && replays.has(key)) return send(200, replays.get(key)!);
      const p = parseForm(body) as { email: string; metadata?: Record<string, string> };
      const customer = {
        id: `cus_test_${randomBytes(12).toString('hex')}`,
        object: 'customer',
        email: p.email,
        metadata: p.metadata ?? {},
      };
      customers.push(customer);
      const text = JSON.stringify(customer);
      if (key) replays.set(key, text);
      return send(200, text);
    }
    const setupIntent = /^\/v1\/setup_intents\/([^/?]+)/.exec(req.url ?? '')?.[1];
    if (req.method === 'GET' && setupIntent) {
      const found = setupIntents.get(setupIntent);
      if (!found) return send(404, { error: { type: 'invalid_request_error', message: `No such setupintent: ${setupIntent}` } });
      const pm = found.payment_method;
      // Expanded as asked (`expand[]=payment_method`): the card's brand and last four digits.
      return send(200, {
        id: found.id,
        object: 'setup_intent',
        status: pm ? 'succeeded' : 'requires_payment_method',
        payment_method: pm
          ? { id: pm, object: 'payment_method', type: 'card', card: { brand: 'visa', last4: TEST_CARDS[pm]?.last4 ?? '4242' } }
          : null,
      });
    }
    if (req.method === 'GET' && path === '/v1/payment_intents/search') {
      // Stripe's search query language, the one form our code asks: metadata['<key>']:'<value>'.
      const [, name, value] = /^metadata\['([^']+)'\]:'([^']*)'$/.exec(flat.query ?? '') ?? [];
      if (!name) return send(400, { error: { type: 'invalid_request_error', message: `Unsupported search query: ${flat.query}` } });
      const data = paymentIntents.filter((pi) => pi.metadata[name] === value);
      return send(200, { object: 'search_result', data, has_more: false, next_page: null, url: '/v1/payment_intents/search' });
    }
    const retrieveIntent = /^\/v1\/payment_intents\/([^/]+)$/.exec(path)?.[1];
    if (req.method === 'GET' && retrieveIntent) {
      const found = paymentIntents.find((pi) => pi.id === retrieveIntent);
      if (!found)
        return send(404, {
          error: { type: 'invalid_request_error', code: 'resource_missing', message: `No such payment_intent: '${retrieveIntent}'` },
        });
      return send(200, found);
    }
    if (req.method === 'POST' && req.url === '/v1/payment_intents') {
      if (key && replays.has(key)) return send(200, replays.get(key)!);
      if (key && failedReplays.has(key)) return send(402, failedReplays.get(key)!);
      const p = parseForm(body) as {
        amount: string;
        currency: string;
        customer: string;
        payment_method: string;
        metadata?: Record<string, string>;
      };
      const failure = TEST_CARDS[p.payment_method]?.failure ?? null;
      const intent = {
        id: `pi_test_${randomBytes(12).toString('hex')}`,
        object: 'payment_intent',
        amount: Number(p.amount),
        amount_received: failure ? 0 : Number(p.amount),
        currency: p.currency,
        customer: p.customer,
        payment_method: p.payment_method,
        status: failure ? 'requires_payment_method' : 'succeeded',
        metadata: p.metadata ?? {},
        last_payment_error: failure
          ? { type: 'card_error', code: failure, decline_code: failure === 'card_declined' ? 'generic_decline' : null }
          : null,
      };
      paymentIntents.push(intent);
      if (failure) {
        // As Stripe answers an off-session confirmation that fails: 402, the PaymentIntent in the error.
        const text = JSON.stringify({
          error: { type: 'card_error', code: failure, message: `Test card: ${failure}`, payment_intent: intent },
        });
        if (key) failedReplays.set(key, text);
        return send(402, text);
      }
      const text = JSON.stringify(intent);
      if (key) replays.set(key, text);
      return send(200, text);
    }
    const detach = /^\/v1\/payment_methods\/([^/]+)\/detach$/.exec(req.url ?? '')?.[1];
    if (req.method === 'POST' && detach) {
      detached.push(detach);
      return send(200, { id: detach, object: 'payment_method', customer: null });
    }
    const hidden = ({ secret: _secret, ...endpoint }: FakeWebhookEndpoint) => endpoint;
    if (req.method === 'GET' && path === '/v1/webhook_endpoints') {
      return send(200, { object: 'list', url: path, has_more: false, data: webhookEndpoints.map(hidden) });
    }
    if (req.method === 'POST' && path === '/v1/webhook_endpoints') {
      const p = parseForm(body) as { url?: string; enabled_events?: string[]; description?: string; api_version?: string };
      if (!p.url || !Array.isArray(p.enabled_events) || p.enabled_events.length === 0) {
        return send(400, { error: { type: 'invalid_request_error', message: 'url and enabled_events are required' } });
      }
      const endpoint: FakeWebhookEndpoint = {
        id: `we_test_${randomBytes(12).toString('hex')}`,
        object: 'webhook_endpoint',
        url: p.url,
        enabled_events: p.enabled_events,
        status: 'enabled',
        description: p.description ?? null,
        api_version: p.api_version ?? null,
        secret: `whsec_${randomBytes(24).toString('hex')}`,
      };
      webhookEndpoints.push(endpoint);
      // The only answer that carries the signing secret, as with Stripe.
      return send(200, endpoint);
    }
    const endpointId = /^\/v1\/webhook_endpoints\/([^/]+)$/.exec(path)?.[1];
    if (endpointId) {
      const endpoint = webhookEndpoints.find((e) => e.id === endpointId);
      if (!endpoint) return send(404, { error: { type: 'invalid_request_error', message: `No such webhook endpoint: '${endpointId}'` } });
      if (req.method === 'POST') {
        const p = parseForm(body) as { enabled_events?: string[]; disabled?: string };
        if (p.enabled_events) endpoint.enabled_events = p.enabled_events;
        if (p.disabled !== undefined) endpoint.status = p.disabled === 'true' ? 'disabled' : 'enabled';
      }
      return send(200, hidden(endpoint));
    }
    if (req.method === 'GET' && path === '/v1/events') {
      const p = parseForm(query) as { types?: string[]; created?: { gte?: string }; limit?: string; starting_after?: string };
      const newestFirst = events
        .filter((e) => !p.types || p.types.includes(e.type))
        .filter((e) => p.created?.gte === undefined || e.created >= Number(p.created.gte))
        .reverse()
        .sort((a, b) => b.created - a.created);
      const from = p.starting_after ? newestFirst.findIndex((e) => e.id === p.starting_after) + 1 : 0;
      const limit = Number(p.limit ?? 10);
      const page = newestFirst.slice(from, from + limit);
      return send(200, { object: 'list', url: path, has_more: from + limit < newestFirst.length, data: page });
    }
    send(404, { error: { type: 'invalid_request_error', message: `No such route ${req.method} ${req.url}` } });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  const paidWithStripeTax: FakeStripe['paidWithStripeTax'] = (sessionId, country, options = {}) => {
    const session = sessions.get(sessionId);
    if (!session) throw new Error(`no session ${sessionId}`);
    if (!(session.automatic_tax as { enabled: boolean }).enabled) throw new Error(`session ${sessionId} has no automatic_tax`);
    const net = session.amount_subtotal as number;
    const { tax, rate, reason } = fakeStripeTax(net, country, Boolean(options.vatId));
    const totals = { amount_discount: 0, amount_shipping: 0, amount_tax: tax };
    const paid = {
      ...session,
      status: 'complete',
      payment_status: 'paid',
      amount_total: net + tax,
      total_details: totals,
      automatic_tax: { ...(session.automatic_tax as object), status: 'complete' },
      customer_details: {
        address: { country, line1: 'Somewhere 1', city: 'Somewhere', postal_code: '12345' },
        tax_exempt: 'none',
        tax_ids: options.vatId ? [{ type: 'eu_vat', value: options.vatId }] : [],
      },
      payment_intent: `pi_test_${randomBytes(12).toString('hex')}`,
    };
    const breakdown = {
      discounts: [],
      taxes: [
        {
          amount: tax,
          rate: { object: 'tax_rate', country, percentage: rate / 100 },
          taxability_reason: reason,
          taxable_amount: tax ? net : 0,
        },
      ],
    };
    sessions.set(sessionId, { ...paid, total_details: { ...totals, breakdown } });
    return paid;
  };
  return {
    paidWithStripeTax,
    taxCalculations,
    taxTransactions,
    url: `http://127.0.0.1:${port}`,
    requests,
    sessions,
    refunds,
    customers,
    setupIntents,
    paymentIntents,
    detached,
    webhookEndpoints,
    events,
    recordEvent: (type, object, options = {}) => {
      const event: FakeEvent = {
        id: `evt_test_${randomBytes(12).toString('hex')}`,
        object: 'event',
        type,
        created: options.created ?? Math.floor(Date.now() / 1000),
        livemode: false,
        api_version: '2026-10-28.endive',
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        data: { object },
      };
      events.push(event);
      return event;
    },
    failNext: (status, error = { type: 'api_error', message: 'Injected failure' }, path = undefined) => {
      // One failure: the answer carries `stripe-should-retry: false`, so the client does not retry.
      failures.push({ status, error, path });
    },
    loseAnswers: (count) => {
      answersToLose += count;
    },
    close: () =>
      new Promise<void>((resolve) => {
        failures = [];
        answersToLose = 0;
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
