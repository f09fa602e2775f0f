/**
 * A webhook endpoint's bounds, as stored and shown: the url after normalisation
 * (shared/webhooks/targets.ts `storedTargetUrl`). Apart from the schemas (schemas/webhooks.ts)
 * so that the code that stores endpoints does not load zod at a function's cold start.
 */
export const WEBHOOK_URL_MAX = 2048;
export const WEBHOOK_DESCRIPTION_MAX = 200;
