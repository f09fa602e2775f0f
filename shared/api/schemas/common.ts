import * as z from 'zod';
import { CURRENCIES } from '../../currency.ts';
import { labelKeyProblem, labelValueProblem, MAX_LABELS } from '../../labels.ts';

/** The building blocks the schema modules of every domain share. */

/** z.uuid() takes exactly 36 characters; the max states it in the document. */
export const Uuid = z.uuid().max(36);

/*
 * Bounded building blocks. Every string, integer and array of the document states its limit (the
 * OWASP rules of `npm run lint:api`), and validation enforces that same limit: for requests what the
 * service accepts, for responses what it produces (every response is checked outside AWS).
 */
export const INT32_MAX = 2_147_483_647;
/** A string of at most `max` characters. */
export const text = (max: number) => z.string().max(max);
/** An integer that fits 32 bits: counts, sizes in MB, percentages, days. */
export const int32 = (min: number, max: number) => z.number().int().min(min).max(max).meta({ format: 'int32' });
/** An integer that may pass 32 bits (money sums, bytes, panel ids); JavaScript numbers are exact to 2^53 − 1. */
export const int64 = (min: number, max: number) => z.number().int().min(min).max(max).meta({ format: 'int64' });
/** How many of something. */
export const Count = int32(0, INT32_MAX);
/** Cents or millicents that are never negative (prices, sums of charges, top-ups). */
export const Cents = int64(0, Number.MAX_SAFE_INTEGER);
/** Cents as the ledger sums them: signed (deductions and charges are negative, a balance may go below zero). */
export const SignedCents = int64(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
/** The deployment's currency (shared/currency.ts): every amount in cents is in its hundredths. */
export const Currency = z.enum(CURRENCIES).meta({
  id: 'Currency',
  description:
    "ISO 4217, lower case: the platform's one currency, chosen at set-up. Amounts in cents are its hundredths (euro cents, pence, …).",
  example: 'usd',
});
/** A moment as the service writes it (`toISOString()`, 24 characters). */
export const Timestamp = z.iso.datetime().max(32);
/** Ids the panel gives (MySQL unsigned `increments`): eggs, nests, nodes, users. */
export const PanelId = int64(1, 4_294_967_295);

/** Megabytes as the panel stores them (unsigned 32-bit columns). */
export const PanelMb = int64(0, 4_294_967_295);
/** Megabytes left over: negative when a node is allocated past its capacity. */
export const SignedMb = int64(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);

/** Addresses as identity providers hand them out; `admin@localhost` (the local default) included. */
export const Email = z
  .string()
  .min(3)
  .max(254)
  .regex(/^[^\s@]+@[^\s@]+$/, 'Invalid email address')
  // No `format: email`: JSON Schema's format (RFC 5321 with a dotted domain) refuses
  // `admin@localhost`, which the service accepts; the pattern above is the rule.
  .meta({ description: 'An e-mail address as the identity provider hands it out (`name@host`).' });

export const ListQuery = z.object({
  limit: z
    .string()
    .regex(/^\d{1,3}$/, 'must be a whole number from 1 to 100')
    .transform(Number)
    .pipe(z.number().int().min(1).max(100))
    .optional()
    .transform((v) => v ?? 25)
    .meta({ description: 'Page size, 1 to 100 (default 25).', type: 'integer', format: 'int32', minimum: 1, maximum: 100 }),
  cursor: z.string().max(4096).optional().meta({ description: 'The `nextCursor` of the previous page.' }),
});

/**
 * Human text (names, notes): no C0 or C1 controls (NEL U+0085 included), no line or paragraph
 * separators (U+2028, U+2029) and no bidirectional overrides that could spoof logs or a UI.
 */
export const SafeText = z
  .string()
  .refine(
    (v) => !/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(v),
    'must not contain control characters, line separators or bidirectional overrides',
  );

export const listOf = <T extends z.ZodType>(item: T, id: string) =>
  z
    .object({
      data: z.array(item).max(100),
      nextCursor: text(4096).nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
    })
    .meta({ id });

/** `:id` of a path: a UUID. */
export const IdParam = z.object({ id: Uuid });

/**
 * Egg variable name to value (deploy, startup changes): the value is text the panel hands to the
 * server's environment, so it follows the text rules (no controls, NUL and newlines included).
 */
export const EggVariables = z
  .record(z.string().min(1).max(191), SafeText.max(4096))
  .refine((v) => Object.keys(v).length <= 100, 'at most 100 variables');

/** Labels (shared/labels.ts has the rules): on servers, API keys and webhook endpoints. */
export const Labels = z
  .record(z.string().max(317), z.string().max(63))
  .superRefine((v, ctx) => {
    const entries = Object.entries(v);
    if (entries.length > MAX_LABELS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_LABELS} labels` });
    for (const [key, value] of entries) {
      const problem = labelKeyProblem(key) ?? labelValueProblem(value);
      if (problem) ctx.addIssue({ code: 'custom', path: [key], message: problem });
    }
  })
  .meta({
    id: 'Labels',
    maxProperties: MAX_LABELS,
    example: { env: 'prod', 'example.com/team': 'blue' },
    description: 'At most 32; keys `[prefix/]name`, values empty or a name (docs/api.md, Labels).',
  });
