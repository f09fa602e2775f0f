import * as z from 'zod';
import { define } from '../route-def.ts';
import { Health } from '../schemas/health.ts';
import { EmailConfirmed, EmailConfirmQuery, Unsubscribed, UnsubscribeQuery } from '../schemas/mail.ts';

/** The public group: health, the OpenAPI document and its reference page (no credential). */
export const publicRoutes = define({
  health: {
    method: 'GET',
    path: '/v1/health',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    summary: 'Liveness and instance count',
    response: Health,
  },
  openapi: {
    method: 'GET',
    path: '/openapi.json',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    // Served as text: a prebuilt document in Lambda (shared/openapi/bundle-files.ts).
    raw: true,
    summary: 'This OpenAPI document',
    response: z.string(),
  },
  docs: {
    method: 'GET',
    path: '/docs',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    raw: true,
    summary: 'Interactive API reference',
    response: z.string(),
  },
  docsAsset: {
    method: 'GET',
    path: '/docs/assets/:file',
    group: 'public',
    tag: 'Health',
    auth: 'none',
    hidden: true,
    raw: true,
    summary: 'Assets of the API reference (served by the service itself, no CDN)',
    params: z.object({ file: z.string().max(64) }),
    response: z.string(),
  },
  // RFC 8058: mail clients POST the List-Unsubscribe link with no credential; a GET (a person
  // opening the link) only shows a page with the button, so link scanners change nothing.
  mailUnsubscribe: {
    method: 'POST',
    path: '/v1/mail/unsubscribe',
    group: 'public',
    tag: 'Account',
    auth: 'none',
    summary: 'One-click unsubscribe: turns off the message type the signed token names',
    description:
      'The link of a message’s List-Unsubscribe header (RFC 8058). The body (`List-Unsubscribe=One-Click`) is not read. A token that is not the service’s own is 400 and changes nothing.',
    query: UnsubscribeQuery,
    response: Unsubscribed,
    // Mailbox providers post their users' unsubscribes from a few addresses: a per-IP limit would
    // refuse them. A forged token costs one HMAC and no read.
    unlimited: true,
  },
  mailUnsubscribePage: {
    method: 'GET',
    path: '/v1/mail/unsubscribe',
    group: 'public',
    tag: 'Account',
    auth: 'none',
    raw: true,
    mediaType: 'text/html',
    summary: 'The unsubscribe link opened in a browser: a page with a button that posts it',
    query: UnsubscribeQuery,
    response: z.string().max(20_000),
  },
  // The link of the e-mail confirmation message: a POST confirms, a GET only shows the button
  // (link scanners open links). The token is the credential.
  confirmEmail: {
    method: 'POST',
    path: '/v1/account/email/confirm',
    group: 'public',
    tag: 'Account',
    auth: 'none',
    summary: 'Confirm a new account e-mail with the token of its confirmation link',
    description:
      'Mail goes to the new address from then on. Posting the same link again answers the same and changes nothing. A token that is forged, expired (24 hours) or replaced by a newer request is 400 and changes nothing.',
    query: EmailConfirmQuery,
    response: EmailConfirmed,
  },
  confirmEmailPage: {
    method: 'GET',
    path: '/v1/account/email/confirm',
    group: 'public',
    tag: 'Account',
    auth: 'none',
    raw: true,
    mediaType: 'text/html',
    summary: 'The confirmation link opened in a browser: a page with a button that posts it',
    query: EmailConfirmQuery,
    response: z.string().max(20_000),
  },
});
