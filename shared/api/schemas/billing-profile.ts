import * as z from 'zod';
import { SafeText, Timestamp } from './common.ts';

/**
 * Who an invoice is from and to: the account's billing profile (account group, README "Invoice
 * documents") and the platform's seller details (the `invoiceIssuer` setting). Both print on the
 * invoice PDF; every field is optional, and the document prints what is set.
 */

/** ISO 3166-1 alpha-2, the 249 officially assigned codes (no reserved ones such as EU, UK or XK). */
const COUNTRY_CODES = (
  'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ CA CC CD CF CG ' +
  'CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL ' +
  'GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA ' +
  'LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP ' +
  'NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV ' +
  'SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
).split(' ') as [string, ...string[]];

export const CountryCode = z.enum(COUNTRY_CODES).meta({ id: 'CountryCode', description: 'ISO 3166-1 alpha-2, upper case.' });

/** One line of human text: trimmed, not empty (send null to clear), no control characters. */
const line = (max: number) => SafeText.trim().min(1).max(max);

/** A postal address as the invoice prints it, line by line. */
const addressFields = {
  line1: line(100).nullable(),
  line2: line(100).nullable(),
  postalCode: line(20).nullable(),
  city: line(100).nullable(),
  region: line(100).nullable().meta({ description: 'State, province or county.' }),
  country: CountryCode.nullable(),
};

export const PostalAddress = z.object(addressFields).strict().meta({ id: 'PostalAddress' });

/**
 * A VAT or other tax id, loosely: a two-letter country prefix and 2 to 18 letters, digits, spaces,
 * dots or dashes (EU VAT ids are 4 to 14 characters; CHE-123.456.789 MWST is 20). The payment
 * provider or the accountant checks it against the registry; this keeps out what cannot be one.
 */
const VatId = z
  .string()
  .max(20)
  // Checked before the trim, as the document's pattern reads: only spaces may pad it (a trim also
  // drops Unicode separators, which the pattern refuses).
  .regex(/^ *[A-Za-z]{2}[0-9A-Za-z .-]{2,18} *$/, 'must be a country prefix and 2 to 18 letters, digits, spaces, dots or dashes')
  .trim()
  .meta({ example: 'DE123456789', description: 'A VAT or other tax id with its country prefix; stored upper case.' });

const profileFields = {
  name: line(100).nullable().meta({ description: 'The person the invoice is addressed to.' }),
  company: line(100).nullable(),
  address: PostalAddress,
  vatId: VatId.nullable(),
};

export const BillingProfile = z
  .object({
    ...profileFields,
    vatCheck: z
      .object({
        valid: z
          .boolean()
          .nullable()
          .meta({ description: 'What VIES said; null: VIES could not answer (checked again at the next top-up).' }),
        checkedAt: Timestamp,
      })
      .nullable()
      .meta({
        description:
          'The VAT id checked against VIES (the EU register) when saved: only a valid id earns the reverse charge. null: no VAT id, or not an EU one.',
      }),
    updatedAt: Timestamp.nullable().meta({ description: 'null: never set (every field null).' }),
  })
  .meta({
    id: 'BillingProfile',
    description: 'Who invoices are addressed to; every field may be null and the invoice prints what is set.',
  });

/** PUT replaces the profile: an omitted field is cleared like null. */
export const BillingProfileUpdate = z
  .object({
    name: profileFields.name.optional(),
    company: profileFields.company.optional(),
    address: PostalAddress.partial().strict().nullable().optional(),
    vatId: profileFields.vatId.optional(),
  })
  .strict()
  .meta({ id: 'BillingProfileUpdate', description: 'The whole profile: omitted fields (and an omitted or null address) are cleared.' });

/** The seller on every invoice (platform setting `invoiceIssuer`). */
export const InvoiceIssuer = z
  .object({
    legalName: line(200).nullable().meta({ description: 'The legal name of the seller.' }),
    address: PostalAddress,
    taxId: line(40).nullable().meta({ description: 'VAT or other tax id, as it should print.' }),
    email: line(254).nullable().meta({ description: 'A contact address printed under the seller.' }),
    footer: line(500).nullable().meta({ description: 'Printed at the foot of every invoice (payment terms, registration).' }),
  })
  .strict()
  .meta({ id: 'InvoiceIssuer', description: 'The seller printed on invoice PDFs; null fields are left out.' });

/** No address (kept apart from the schemas: settings defaults use it without loading zod). */
export { EMPTY_ADDRESS } from '../empty-address.ts';
