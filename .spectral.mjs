// Spectral's OpenAPI ruleset plus the OWASP API Security Top 10 (2023) ruleset, run by
// `npm run lint:api` (dev/lint-openapi.ts). A JS ruleset: it imports both rulesets from node_modules,
// where a YAML `extends` by name would fetch them from a CDN. Every rule turned off, and every place
// a rule is waived, is argued in README "API lint".
import { oas } from '@stoplight/spectral-rulesets';
import owasp from '@stoplight/spectral-owasp-ruleset';

/** JSON pointer of a Spectral path. */
const pointerOf = (path) => `/${path.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/')}`;

/**
 * The OWASP rule `name`, except at the given places of the document (JSON pointers, each with what
 * is under it). Spectral's own `overrides` cannot do this: their pointers only apply inside files
 * reached through a $ref, and the document is one file.
 */
function except(name, places) {
  const rule = owasp.rules[name];
  const waived = (path) => places.some((p) => path === p || path.startsWith(`${p}/`));
  // A rule also meets a schema where a $ref was inlined; Spectral reports it where it is written, so ask the same.
  const written = (path, context) => pointerOf(context.documentInventory.findAssociatedItemForPath(path, true)?.path ?? path);
  const wrap = (fn) => (input, options, context) => {
    if (waived(written(context.path, context))) return [];
    const results = fn(input, options, context) ?? [];
    return results.filter((r) => !r.path || !waived(written(r.path, context)));
  };
  // biome-ignore lint/suspicious/noThenProperty: Spectral's rule format calls a rule's checks `then`.
  return { ...rule, then: [rule.then].flat().map((then) => ({ ...then, function: wrap(then.function) })) };
}

const schema = (name) => `/components/schemas/${name}`;
const operation = (path, method) => `/paths/${path.replaceAll('~', '~0').replaceAll('/', '~1')}/${method}`;

export default {
  extends: [oas, owasp],
  // The OWASP rules address these by name (#ArrayProperties …); the rules redefined below need them here too.
  aliases: owasp.aliases,
  rules: {
    // No CORS on purpose: the API serves programs, not pages of other origins, so it sends no
    // Access-Control-Allow-Origin at all — the deny-all this rule wants; documenting one would be false.
    'owasp:api8:2023-define-cors-origin': 'off',
    // Free text (names, notes, messages, what the panel reports) has no format to state; every string
    // still has its maxLength (owasp:api4:2023-string-limit, an error), and ids, times and URLs their format.
    'owasp:api4:2023-string-restricted': 'off',

    // Lists the service passes through from the panels, as long as the panels hold them: a maxItems
    // would be a promise the service does not keep. Its own lists are pages of at most 100.
    'owasp:api4:2023-array-limit': except('owasp:api4:2023-array-limit', [
      `${schema('FileList')}/properties/data`,
      `${schema('EggList')}/properties/data`,
      `${schema('EggList')}/properties/unavailableInstances`,
      `${schema('EggDetail')}/properties/variables`,
      `${schema('PublicInstanceList')}/properties/data`,
      `${schema('RegionList')}/properties/data`,
      `${schema('RegionList')}/properties/unavailableInstances`,
      `${schema('InstanceList')}/properties/data`,
      `${schema('Region')}/properties/instances`,
      `${schema('InstanceTestReport')}/properties/nodes`,
    ]),
    // The panel's egg id: an entry of the public catalog every customer reads, not an object anyone owns.
    // The panel's allocation id: a port of the caller's own server (the server's uuid comes first and is checked).
    'owasp:api1:2023-no-numeric-ids': except('owasp:api1:2023-no-numeric-ids', [
      operation('/v1/eggs/{instanceId}/{eggId}', 'get'),
      operation('/v1/admin/eggs/{instanceId}/{eggId}', 'put'),
      operation('/v1/servers/{id}/allocations/{allocationId}', 'patch'),
      operation('/v1/servers/{id}/allocations/{allocationId}', 'delete'),
    ]),
    // Stripe's deliveries are exempt from the rate limit, so their responses carry no RateLimit headers.
    'owasp:api4:2023-rate-limit': except('owasp:api4:2023-rate-limit', [
      operation('/v1/webhooks/stripe', 'post'),
      // Mailbox providers post their users' one-click unsubscribes from a few addresses: exempt too.
      operation('/v1/mail/unsubscribe', 'post'),
    ]),
    // RFC 8058 one-click unsubscribe: the mailbox provider posts the List-Unsubscribe URL as it is, with
    // no credential; the signed token in it is the whole authority, and it can only turn off one optional message type.
    // The e-mail confirmation link works the same way: opened from the new mailbox, its token the authority.
    'owasp:api2:2023-write-restricted': except('owasp:api2:2023-write-restricted', [
      operation('/v1/mail/unsubscribe', 'post'),
      operation('/v1/account/email/confirm', 'post'),
    ]),
    'owasp:api2:2023-no-credentials-in-url': except('owasp:api2:2023-no-credentials-in-url', [
      operation('/v1/mail/unsubscribe', 'post'),
      operation('/v1/mail/unsubscribe', 'get'),
      operation('/v1/account/email/confirm', 'post'),
      operation('/v1/account/email/confirm', 'get'),
    ]),
    // The health check is public on purpose (load balancers, uptime monitors); it tells nothing about any account.
    'owasp:api2:2023-read-restricted': except('owasp:api2:2023-read-restricted', [operation('/v1/health', 'get')]),
  },
};
