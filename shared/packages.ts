/**
 * The third-party packages a cold start does not load: each is loaded on its first use, through
 * the one loader here, and the bundler writes it to a chunk of its own (infra/bundle.ts). Every
 * other import in shared/ and functions/ is static. Why each is here, with the bytes it keeps out
 * of the start: bench/README.md, "Packages loaded on first use". A package joins this list only
 * with such a measurement; our own modules never do.
 */
export type { S3Client } from '@aws-sdk/client-s3';
export type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
export type { SQSClient } from '@aws-sdk/client-sqs';
export type { SESv2Client } from '@aws-sdk/client-sesv2';
export type { Transporter } from 'nodemailer';
export type { Route53Client } from '@aws-sdk/client-route-53';

/** `load` once; every later call shares its promise. */
const once = <T>(load: () => Promise<T>): (() => Promise<T>) => {
  let loaded: Promise<T> | undefined;
  return () => {
    loaded ??= load();
    return loaded;
  };
};

/**
 * zod: where our code checks data at run time outside a route's schemas (Stripe's events), it
 * builds its schemas with this on first use. (A route's own schemas load with its first request,
 * in the function's schema chunk, infra/bundle.ts.)
 */
export const loadZod = /* @__PURE__ */ once(() => import('zod'));
/** Stripe's library: checkout, refunds, the webhook's signature check and the event router. */
export const loadStripe = /* @__PURE__ */ once(() => import('stripe'));
/** pdf-lib: the invoice PDF. */
export const loadPdfLib = /* @__PURE__ */ once(() => import('pdf-lib'));
/** fontkit (pdf-lib's build): reads and subsets the invoice PDF's embedded font (shared/invoices/fonts.ts). */
export const loadFontkit = /* @__PURE__ */ once(() => import('@pdf-lib/fontkit'));
/** jose: session tokens (OIDC JWTs); API keys never need it. */
export const loadJose = /* @__PURE__ */ once(() => import('jose'));
/** The Secrets Manager client: panel keys, the cursor key, the Stripe secrets. */
export const loadSecretsManager = /* @__PURE__ */ once(() => import('@aws-sdk/client-secrets-manager'));
/** The SQS client: the billing scheduler's queue. */
export const loadSqs = /* @__PURE__ */ once(() => import('@aws-sdk/client-sqs'));
/**
 * nodemailer: builds each message's MIME, and talks SMTP to the local mail server (shared/mail).
 * CommonJS only: its bundled chunk exports `module.exports` as `default` and no named exports
 * (Node's own loader adds them, so only a bundle shows it), hence the object under `default`.
 */
export const loadNodemailer = /* @__PURE__ */ once(async () => (await import('nodemailer')).default);
/** The SES v2 client: the mail sender in AWS (shared/mail/transport.ts); the SMTP path never loads it. */
export const loadSesV2 = /* @__PURE__ */ once(() => import('@aws-sdk/client-sesv2'));
/** The S3 client: the brand's logo, put in the dashboard's bucket (admin function only). */
export const loadS3 = /* @__PURE__ */ once(() => import('@aws-sdk/client-s3'));
/** The Route 53 client: a server's subdomain records (shared/dns/route53.ts), written by deploys, deletes and repairs only. */
export const loadRoute53 = /* @__PURE__ */ once(() => import('@aws-sdk/client-route-53'));
/**
 * The SDK's whole default credential chain, which the Lambda bundles load only without the
 * credentials Lambda sets in the environment (infra/lambda-credentials.ts).
 */
export const loadCredentialChain = /* @__PURE__ */ once(() => import('@aws-sdk/credential-provider-node'));
