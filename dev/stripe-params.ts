/**
 * Writes tests/helpers/stripe-params.json: the request parameters Stripe accepts on the endpoints
 * the service calls, so the fake Stripe (tests/helpers/fake-stripe.ts) refuses an unknown one as
 * Stripe does (400 `parameter_unknown`).
 *
 * Two sources, both Stripe's published API description: github.com/stripe/openapi's
 * openapi/spec3.json (the copy given on the command line), and the installed stripe library's
 * types, generated from a newer spec (node_modules/stripe/OPENAPI_VERSION) for the API version the
 * library sends as Stripe-Version, which is the version Stripe checks our requests against. So the
 * accepted names are the library's; what differs from the spec copy is listed per endpoint
 * (`addedSinceSpec`, `removedSinceSpec`: e.g. `payment_method_types`, which the library's version
 * no longer accepts on PaymentIntents). Required: required in both.
 *
 *   git --git-dir=<stripe/openapi clone> show <commit>:openapi/spec3.json > /tmp/spec3.json
 *   node dev/stripe-params.ts /tmp/spec3.json <commit> && npx biome format --write tests/helpers/stripe-params.json
 *
 * Add an endpoint here when the service starts calling one (the fake answers 404 for others); one
 * newer than the spec copy goes in NOT_IN_SPEC, its names and required ones from the library's types alone.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

interface Endpoint {
  method: 'GET' | 'POST';
  /** The path as the spec writes it (`{intent}` for an id). */
  path: string;
  /** The library's params interface: file under node_modules/stripe/esm/resources, interface name. */
  types: [string, string];
}

const ENDPOINTS: Endpoint[] = [
  { method: 'POST', path: '/v1/checkout/sessions', types: ['Checkout/Sessions.d.ts', 'SessionCreateParams'] },
  // Stripe Tax's reason for no tax: the session read back with its breakdown (shared/payments/stripe-tax.ts).
  { method: 'GET', path: '/v1/checkout/sessions/{session}', types: ['Checkout/Sessions.d.ts', 'SessionRetrieveParams'] },
  { method: 'POST', path: '/v1/customers', types: ['Customers.d.ts', 'CustomerCreateParams'] },
  { method: 'POST', path: '/v1/payment_intents', types: ['PaymentIntents.d.ts', 'PaymentIntentCreateParams'] },
  { method: 'GET', path: '/v1/payment_intents/{intent}', types: ['PaymentIntents.d.ts', 'PaymentIntentRetrieveParams'] },
  { method: 'GET', path: '/v1/payment_intents/search', types: ['PaymentIntents.d.ts', 'PaymentIntentSearchParams'] },
  { method: 'POST', path: '/v1/payment_methods/{payment_method}/detach', types: ['PaymentMethods.d.ts', 'PaymentMethodDetachParams'] },
  { method: 'POST', path: '/v1/refunds', types: ['Refunds.d.ts', 'RefundCreateParams'] },
  { method: 'GET', path: '/v1/setup_intents/{intent}', types: ['SetupIntents.d.ts', 'SetupIntentRetrieveParams'] },
  // The deploy command's endpoint sync and the admin health view (shared/payments/webhook-endpoint.ts).
  { method: 'GET', path: '/v1/webhook_endpoints', types: ['WebhookEndpoints.d.ts', 'WebhookEndpointListParams'] },
  { method: 'POST', path: '/v1/webhook_endpoints', types: ['WebhookEndpoints.d.ts', 'WebhookEndpointCreateParams'] },
  {
    method: 'POST',
    path: '/v1/webhook_endpoints/{webhook_endpoint}',
    types: ['WebhookEndpoints.d.ts', 'WebhookEndpointUpdateParams'],
  },
  // The event reconciliation (shared/payments/reconcile-events.ts).
  { method: 'GET', path: '/v1/events', types: ['Events.d.ts', 'EventListParams'] },
];

/**
 * Endpoints the spec copy (2022) predates: Stripe Tax's API came in 2023. Their parameters are those
 * of the library's params interface (required: declared without `?`), so the fake stays as strict:
 *   node_modules/stripe/esm/resources/Tax/Calculations.d.ts   Tax.CalculationCreateParams
 *     (currency, line_items required; customer, customer_details, expand, ship_from_details, shipping_cost, tax_date)
 *   node_modules/stripe/esm/resources/Tax/Transactions.d.ts   Tax.TransactionCreateFromCalculationParams
 *     (calculation, reference required; expand, metadata, posted_at)
 */
const NOT_IN_SPEC: Endpoint[] = [
  { method: 'POST', path: '/v1/tax/calculations', types: ['Tax/Calculations.d.ts', 'CalculationCreateParams'] },
  {
    method: 'POST',
    path: '/v1/tax/transactions/create_from_calculation',
    types: ['Tax/Transactions.d.ts', 'TransactionCreateFromCalculationParams'],
  },
];

interface Operation {
  parameters?: { in: string; name: string; required?: boolean }[];
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, unknown>; required?: string[] } }> };
}

/** Top-level names of a POST's form body, or a GET's query. */
function fromSpec(spec: { paths: Record<string, Record<string, Operation>> }, endpoint: Endpoint) {
  const op = spec.paths[endpoint.path]?.[endpoint.method.toLowerCase()];
  if (!op) throw new Error(`${endpoint.method} ${endpoint.path} is not in the spec`);
  if (endpoint.method === 'GET') {
    const query = (op.parameters ?? []).filter((p) => p.in === 'query');
    return { names: query.map((p) => p.name), required: query.filter((p) => p.required).map((p) => p.name) };
  }
  const schema = op.requestBody?.content?.['application/x-www-form-urlencoded']?.schema;
  return { names: Object.keys(schema?.properties ?? {}), required: schema?.required ?? [] };
}

/**
 * Top-level members of `interface <name> {` (inside a namespace for Checkout): one indent deeper, up to its `}`;
 * with those of the interface it extends (a list's `PaginationParams`, in ../shared.d.ts).
 */
function fromTypes(root: string, [file, name]: [string, string]): { names: string[]; required: string[] } {
  const lines = readFileSync(new URL(`node_modules/stripe/esm/resources/${file}`, root), 'utf8').split('\n');
  const start = lines.findIndex((line) => new RegExp(`^\\s*(export )?interface ${name}( extends \\w+)? \\{$`).test(line));
  if (start < 0) throw new Error(`${name} is not in ${file}`);
  const indent = /^\s*/.exec(lines[start]!)![0];
  const member = new RegExp(`^${indent} {4}(\\w+)\\??:`);
  const parent = / extends (\w+) \{$/.exec(lines[start]!)?.[1];
  const inherited = parent ? fromTypes(root, ['../shared.d.ts', parent]) : { names: [], required: [] };
  const names: string[] = [...inherited.names];
  const required: string[] = [...inherited.required];
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith(`${indent}}`)) break;
    const found = member.exec(line);
    if (found) names.push(found[1]!);
    if (found && !line.includes('?:')) required.push(found[1]!);
  }
  return { names, required };
}

const [specPath, commit] = process.argv.slice(2);
if (!specPath) {
  console.error('usage: node dev/stripe-params.ts <spec3.json> [stripe/openapi commit]');
  process.exit(2);
}
const root = new URL('..', import.meta.url);
const spec = JSON.parse(readFileSync(specPath, 'utf8')) as { info: { version: string }; paths: Record<string, Record<string, Operation>> };
const library = JSON.parse(readFileSync(new URL('node_modules/stripe/package.json', root), 'utf8')) as { version: string };
const apiVersion = /ApiVersion = '([^']+)'/.exec(readFileSync(new URL('node_modules/stripe/esm/apiVersion.js', root), 'utf8'))?.[1];
const endpoints: Record<
  string,
  { params: string[]; required: string[]; addedSinceSpec: string[]; removedSinceSpec: string[]; notInSpec?: true }
> = {};
for (const endpoint of ENDPOINTS) {
  const published = fromSpec(spec, endpoint);
  const typed = fromTypes(root.href, endpoint.types);
  const added = typed.names.filter((n) => !published.names.includes(n)).sort();
  endpoints[`${endpoint.method} ${endpoint.path}`] = {
    params: [...typed.names].sort(),
    // Required by both: Stripe has since relaxed some (Checkout's `cancel_url`).
    required: published.required.filter((n) => typed.required.includes(n)).sort(),
    addedSinceSpec: added,
    removedSinceSpec: published.names.filter((n) => !typed.names.includes(n)).sort(),
  };
}
for (const endpoint of NOT_IN_SPEC) {
  if (spec.paths[endpoint.path]) throw new Error(`${endpoint.path} is in the spec copy now: move it to ENDPOINTS`);
  const typed = fromTypes(root.href, endpoint.types);
  endpoints[`${endpoint.method} ${endpoint.path}`] = {
    params: [...typed.names].sort(),
    required: [...typed.required].sort(),
    addedSinceSpec: [...typed.names].sort(),
    removedSinceSpec: [],
    notInSpec: true,
  };
}
const out = {
  source: {
    openapi: `github.com/stripe/openapi openapi/spec3.json${commit ? ` at ${commit}` : ''} (API ${spec.info.version})`,
    library: `stripe ${library.version} types (OPENAPI_VERSION ${readFileSync(new URL('node_modules/stripe/OPENAPI_VERSION', root), 'utf8').trim()}, API ${apiVersion})`,
    script: 'dev/stripe-params.ts',
  },
  endpoints,
};
writeFileSync(fileURLToPath(new URL('tests/helpers/stripe-params.json', root)), `${JSON.stringify(out, null, 2)}\n`);
console.log(`wrote tests/helpers/stripe-params.json (${Object.keys(endpoints).length} endpoints)`);
