import * as z from 'zod';
import { Currency, int32, SafeText } from './common.ts';
import { CountryCode, InvoiceIssuer, PostalAddress } from './billing-profile.ts';
import { Brand } from './brand.ts';

/** Platform settings (admin group; shared/settings reads them through Settings). */

/** A reason or label printed on the invoice: one line, trimmed, not empty. */
const printed = (max: number) => SafeText.trim().min(1).max(max);

/**
 * How top-ups are taxed (shared/invoices/tax.ts, docs/operations.md "Tax"): the operator's choice,
 * printed on every invoice. Rates are basis points (1900 = 19 %); tax is rounded down to the cent.
 */
export const TaxSettings = z
  .discriminatedUnion('treatment', [
    z
      .object({
        treatment: z.literal('none'),
        reason: printed(300)
          .nullable()
          .meta({ description: 'Why no tax is charged, printed on every invoice (e.g. "Not subject to VAT: small business exemption").' }),
      })
      .strict()
      .meta({ title: 'No tax' }),
    z
      .object({
        treatment: z.literal('rates'),
        label: printed(20).meta({ description: 'The name of the tax on the invoice, e.g. VAT, GST, Sales tax.' }),
        // The seller's country: buyers without a country are taxed at its rate (CountryCode kept whole: a $ref in the document).
        sellerCountry: CountryCode,
        rates: z
          .record(z.string().regex(/^[A-Z]{2}$/), int32(0, 10_000))
          .refine((rates) => Object.keys(rates).every((code) => CountryCode.safeParse(code).success), {
            message: 'keys must be ISO 3166-1 alpha-2 country codes, upper case',
          })
          .meta({
            description:
              "Rate per buyer country (ISO 3166-1 alpha-2) in basis points (1900 = 19 %); the buyer's country is the billing profile's, else sellerCountry.",
          }),
        otherCountriesReason: printed(300)
          .nullable()
          .meta({ description: 'Printed on invoices of buyers whose country has no rate (no tax is charged), e.g. "Export of services".' }),
      })
      .strict()
      .meta({
        title: 'Rate table',
        description:
          'An EU business buyer whose VAT id VIES confirms, in another EU country than the seller, pays no tax and the invoice states the reverse charge.',
      }),
    z
      .object({ treatment: z.literal('stripe') })
      .strict()
      .meta({
        title: 'Stripe Tax',
        description: "Stripe Tax computes the tax from the buyer's address and tax id, which Checkout collects.",
      }),
  ])
  .meta({
    id: 'TaxSettings',
    description: 'How top-ups are taxed; the invoice shows net, tax rate, tax and gross, or the reason for none.',
  });

/** Settings are integers with bounds, so no setting can push a ledger sum past the safe-integer range. */
const nonNegative = int32(0, 10_000_000);

export const Settings = z
  .object({
    currency: Currency,
    prices: z
      .object({
        ramMillicentsPerGbHour: nonNegative.meta({ description: 'Price of 1 GiB (1024 MB) of RAM for one hour, in 1/1000 cent.' }),
        cpuMillicentsPerCoreHour: nonNegative.meta({ description: 'Price of one core (cpuPercent 100) for one hour, in 1/1000 cent.' }),
        diskMillicentsPerGbHour: nonNegative.meta({ description: 'Price of 1 GiB (1024 MB) of disk for one hour, in 1/1000 cent.' }),
      })
      .strict(),
    trialCreditCents: nonNegative.meta({ description: 'Granted once to every new account.' }),
    minimumBalanceCents: nonNegative.meta({ description: 'A deploy needs at least this balance besides the 24-hour runway.' }),
    lowBalanceThresholdCents: nonNegative.meta({
      description:
        'balance.low fires once when a change that lowers the balance (a charge, a deduction) leaves it below this (also when it already was, e.g. a trial credit smaller than it), and again only after the balance was back at or above it. An account override (PUT /v1/account/alerts) replaces it.',
    }),
    serverCaps: z
      .object({
        maxRamMb: int32(256, 1_048_576),
        maxCpuPercent: int32(25, 10_000),
        maxDiskMb: int32(512, 10_485_760),
      })
      .strict()
      .meta({ description: 'Largest server one may deploy or resize to.' }),
    maxServersPerAccount: int32(0, 10_000).meta({ description: 'Active plus suspended servers per account.' }),
    maxApiKeysPerAccount: int32(0, 1_000).meta({
      description:
        'API keys an account may hold (revoked keys do not count; expired ones do until revoked). Each key has its own request rate, so this bounds how far keys multiply it. An account override (PUT /v1/admin/users/:id/limits) replaces it.',
    }),
    accountRequestsPerMinute: int32(1, 1_000_000).meta({
      description:
        "Requests per minute of one account, all its credentials together, beside each credential's own limit (240). Never taken below one credential's limit; an account override may go lower.",
    }),
    trialMaxApiKeys: int32(0, 1_000)
      .nullable()
      .meta({ description: 'API keys of a trial account (no top-up and no admin grant yet); null: as maxApiKeysPerAccount.' }),
    trialMaxWebhookEndpoints: int32(0, 10)
      .nullable()
      .meta({ description: 'Webhook endpoints of a trial account (at most the 10 of any account); null: 10.' }),
    topUpBonusPercent: int32(0, 100).meta({ description: 'Bonus credit added to every paid top-up, in percent.' }),
    minimumTopUpCents: int32(50, 99_999_999).meta({ description: 'Smallest checkout amount (Stripe needs at least 50 cents).' }),
    maximumTopUpCents: int32(50, 99_999_999).meta({ description: 'Largest checkout amount.' }),
    suspendedRetentionDays: int32(1, 3650)
      .nullable()
      .meta({ description: 'Delete servers suspended for this many days; null keeps them forever.' }),
    suspensionGraceMinutes: int32(0, 10_080).meta({
      description:
        'How long servers keep running (and are charged) once the balance is at or below zero, before the billing pass suspends them; the balance goes below zero meanwhile (debtCents). 0 (the default) suspends at once; at most 10,080 (7 days). A credit that brings the balance above zero ends the grace.',
    }),
    runwayWarningHours: z
      .array(int32(1, 720))
      .max(5)
      .refine((hours) => new Set(hours).size === hours.length, { message: 'Each horizon once' })
      .meta({
        description:
          'Horizons of the `balance.runway_warning` event, in hours before the servers would be suspended (the credit running out at the current burn, plus the grace): one event per horizon as the time left falls to it, again only after credit lifted it above. Default [24, 2]; [] sends none.',
      }),
    monthlyCapHours: int32(1, 744).nullable().meta({
      description:
        'Optional monthly cap per server: in a calendar month (UTC) a server never pays more than this many hours of its hourly price (each hour capped at its own price); null (the default) charges every hour. E.g. 672 with a 1.5 ¢ server: at most 1,008 ¢ a month, so a full 31-day month (744 h) costs 1,008 ¢, not 1,116 ¢.',
    }),
    invoiceIssuer: InvoiceIssuer.meta({
      description: 'The seller printed on every invoice PDF (GET /v1/invoices/:id/pdf); null fields are left out.',
    }),
    tax: TaxSettings,
    autoTopUpMaxFailures: int32(1, 20).meta({
      description: 'Consecutive failed auto top-ups (declined, authentication required) after which the rule is turned off.',
    }),
    backupsPerServer: int32(0, 100).meta({
      description:
        "Backups every server includes: with the backup slots bought as add-ons, the panel's feature_limits.backups, set at deploy, resize and add-on changes; 0: none.",
    }),
    schedulesPerServer: int32(0, 100).meta({
      description: 'Schedules per server (the panel has no limit of its own; we enforce this one); 0: none. Default 10.',
    }),
    databasesPerServer: int32(0, 100).meta({
      description: "Databases every server includes: with the databases bought as add-ons, the panel's feature_limits.databases.",
    }),
    portsPerServer: int32(1, 100).meta({
      description:
        "Ports (allocations) every server includes, the primary one counted: with the ports bought as add-ons, the panel's feature_limits.allocations.",
    }),
    addons: z
      .object({
        backupMillicentsPerHour: nonNegative.meta({ description: 'Price of one extra backup slot for one hour, in 1/1000 cent.' }),
        databaseMillicentsPerHour: nonNegative.meta({ description: 'Price of one extra database for one hour, in 1/1000 cent.' }),
        portMillicentsPerHour: nonNegative.meta({ description: 'Price of one extra port (allocation) for one hour, in 1/1000 cent.' }),
        maxBackups: int32(0, 100).meta({ description: 'Extra backup slots one server may buy; 0: not sold.' }),
        maxDatabases: int32(0, 100).meta({ description: 'Extra databases one server may buy; 0: not sold.' }),
        maxPorts: int32(0, 100).meta({ description: 'Extra ports one server may buy; 0: not sold.' }),
      })
      .strict()
      .meta({
        description:
          "Add-ons bought per server beyond what it includes (backupsPerServer, databasesPerServer, portsPerServer): priced per hour like resources, added to the server's hourly price.",
      }),
    holdOrphansForConfirmation: z.boolean().meta({
      description:
        'When true (the default), a panel server the reconciler finds without a record is held for an admin to confirm (GET /v1/admin/orphans, POST /v1/admin/orphans/{id}/confirm) instead of deleted from the panel.',
    }),
    brand: Brand,
    customSizesAllowed: z.boolean().meta({
      description:
        'When true (the default), a deploy may give any resources within the caps; when false, only a plan (`planId`, GET /v1/plans): a deploy without one is refused with 422 `plan_mismatch`.',
    }),
  })
  .strict()
  .meta({ id: 'Settings' });

export type SettingsValue = z.infer<typeof Settings>;

/**
 * PUT takes what GET returns, whole or in part, so a client can send back the object it read.
 * Derived from Settings, so a new setting round-trips too. A new `currency` is taken only while no
 * customer account exists (shared/settings/update.ts answers 409 after).
 */
export const SettingsUpdate = Settings.extend({
  prices: Settings.shape.prices.partial().strict(),
  serverCaps: Settings.shape.serverCaps.partial().strict(),
  addons: Settings.shape.addons.partial().strict(),
  invoiceIssuer: InvoiceIssuer.extend({ address: PostalAddress.partial().strict() }).partial().strict(),
  brand: Brand.partial().strict(),
})
  .partial()
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'Give at least one setting to change' })
  .meta({
    id: 'SettingsUpdate',
    description: 'Any subset of the settings, or all of them as GET returns them; omitted fields keep their value.',
  });
