/**
 * The deployment's currency: one for every price, balance, checkout and invoice, chosen at set-up
 * (context `currency`, `CURRENCY` locally) and fixed once customers exist (shared/settings/update.ts).
 */

/**
 * The currencies Stripe charges in with two decimals (docs.stripe.com/currencies), ISO 4217 in
 * lower case as Stripe takes them. Left out, since the ledger counts hundredths: the zero-decimal
 * ones (JPY, KRW, CLP, VND, UGX, …), the three-decimal ones (BHD, JOD, KWD, OMR, TND), and ISK,
 * HUF and TWD, which Stripe takes with two decimals but charges or pays out in whole units only.
 */
export const CURRENCIES = [
  'usd',
  'eur',
  'gbp',
  'aed',
  'afn',
  'all',
  'amd',
  'ang',
  'aoa',
  'ars',
  'aud',
  'awg',
  'azn',
  'bam',
  'bbd',
  'bdt',
  'bgn',
  'bmd',
  'bnd',
  'bob',
  'brl',
  'bsd',
  'bwp',
  'byn',
  'bzd',
  'cad',
  'cdf',
  'chf',
  'cny',
  'cop',
  'crc',
  'cve',
  'czk',
  'dkk',
  'dop',
  'dzd',
  'egp',
  'etb',
  'fjd',
  'fkp',
  'gel',
  'gip',
  'gmd',
  'gtq',
  'gyd',
  'hkd',
  'hnl',
  'htg',
  'idr',
  'ils',
  'inr',
  'jmd',
  'kes',
  'kgs',
  'khr',
  'kyd',
  'kzt',
  'lak',
  'lbp',
  'lkr',
  'lrd',
  'lsl',
  'mad',
  'mdl',
  'mkd',
  'mmk',
  'mnt',
  'mop',
  'mur',
  'mvr',
  'mwk',
  'mxn',
  'myr',
  'mzn',
  'nad',
  'ngn',
  'nio',
  'nok',
  'npr',
  'nzd',
  'pab',
  'pen',
  'pgk',
  'php',
  'pkr',
  'pln',
  'qar',
  'ron',
  'rsd',
  'sar',
  'sbd',
  'scr',
  'sek',
  'sgd',
  'shp',
  'sle',
  'sos',
  'srd',
  'szl',
  'thb',
  'tjs',
  'top',
  'try',
  'ttd',
  'tzs',
  'uah',
  'uyu',
  'uzs',
  'wst',
  'xcd',
  'yer',
  'zar',
  'zmw',
] as const;

export type CurrencyCode = (typeof CURRENCIES)[number];

/** A deployment that never chose one charges in US dollars, as every invoice before the setting did. */
export const DEFAULT_CURRENCY: CurrencyCode = 'usd';

const SUPPORTED: ReadonlySet<string> = new Set(CURRENCIES);

export const isCurrency = (value: unknown): value is CurrencyCode => typeof value === 'string' && SUPPORTED.has(value);

/** A set-up value (`EUR`, ` eur `) as the code Stripe takes, or an error that names the choices' rule. */
export function parseCurrency(value: string, source: string): CurrencyCode {
  const code = value.trim().toLowerCase();
  if (isCurrency(code)) return code;
  throw new Error(
    `${source}=${value}: not a currency this platform charges in. Use an ISO 4217 code Stripe charges with two decimals, such as usd, eur or gbp (list: shared/currency.ts)`,
  );
}

/** Integer hundredths as an exact decimal string, `-1234` → `-12.34`: no floating point on the way. */
export function minorToDecimal(cents: number): string {
  const digits = String(Math.abs(cents)).padStart(3, '0');
  return `${cents < 0 ? '-' : ''}${digits.slice(0, -2)}.${digits.slice(-2)}`;
}

const formatters = new Map<string, Intl.NumberFormat>();

/**
 * Integer cents of a currency as a reader reads them, with its symbol: `1000, 'eur'` → `€10.00`,
 * `'usd'` → `$10.00`, `'chf'` → `CHF 10.00`. Intl formats the exact decimal string, so no amount
 * is ever rounded through a float; always two decimals, since every listed currency has them in Stripe.
 */
export function formatMoney(cents: number, currency: string): string {
  let format = formatters.get(currency);
  if (!format) {
    format = new Intl.NumberFormat('en-US', {
      style: 'currency',
      currency: currency.toUpperCase(),
      minimumFractionDigits: 2,
      maximumFractionDigits: 2,
    });
    formatters.set(currency, format);
  }
  return format.format(minorToDecimal(cents) as `${number}`);
}

/**
 * The code with the sign people know it by, `eur` → `EUR (€)`, `gbp` → `GBP (£)`; the code alone
 * when it is its own sign (`CHF`). Amounts on an invoice carry the code, which no two currencies share.
 */
export function currencyWithSymbol(currency: string): string {
  const code = currency.toUpperCase();
  const symbol = new Intl.NumberFormat('en-US', { style: 'currency', currency: code })
    .formatToParts(0)
    .find((p) => p.type === 'currency')?.value;
  return symbol && symbol !== code ? `${code} (${symbol})` : code;
}
