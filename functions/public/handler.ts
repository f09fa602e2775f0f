import { createGroupHandler } from '../../shared/http/handler.ts';
import { routerForGroups } from '../../shared/http/router.ts';
import { GROUPS } from '../../shared/api/route-def.ts';
import { publicRoutes } from '../../shared/api/routes/public.ts';
import { countInstances } from '../../shared/instances/index.ts';
import { API_VERSION } from '../../shared/openapi/version.ts';
import { DOCS_HTML, docsAsset, openApiText } from '../../shared/openapi/docs-page.ts';
import { readUnsubscribeToken, unsubscribe, unsubscribePage } from '../../shared/mail/unsubscribe.ts';
import { confirmEmailChange } from '../../shared/accounts/email-change.ts';
import { confirmationPage } from '../../shared/mail/email-confirm.ts';

/**
 * Public group: health, the OpenAPI document and the interactive reference. No credential. It also
 * answers every request no route takes (API Gateway's `$default` route): 404, or 405 on a known path.
 */
export const handler = createGroupHandler(
  'public',
  publicRoutes,
  {
    health: async () => ({ status: 'ok', version: API_VERSION, time: new Date().toISOString(), instances: await countInstances() }),
    // Prebuilt in the Lambda asset folder; built in process elsewhere (shared/openapi/bundle-files.ts).
    openapi: async ({ baseUrl }) => openApiText(baseUrl),
    docs: async () => ({ contentType: 'text/html; charset=utf-8', body: DOCS_HTML, cacheSeconds: 300 }),
    docsAsset: async ({ params }) => docsAsset(params.file),
    mailUnsubscribe: async ({ query }) => ({ unsubscribed: true as const, ...(await unsubscribe(query.token)) }),
    // The token is checked before the page is shown: a forged link gets the 400, not a button.
    mailUnsubscribePage: async ({ query }) => {
      await readUnsubscribeToken(query.token);
      return { contentType: 'text/html; charset=utf-8', body: await unsubscribePage(query.token) };
    },
    confirmEmail: async ({ query }) => ({ confirmed: true as const, ...(await confirmEmailChange(query.token)) }),
    // A forged or expired link gets the 400, not a button.
    confirmEmailPage: async ({ query }) => ({ contentType: 'text/html; charset=utf-8', body: await confirmationPage(query.token) }),
  },
  { unrouted: () => routerForGroups(GROUPS) },
);
