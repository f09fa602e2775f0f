/**
 * The platform settings as the settings form shows them: each one's path in the settings object,
 * its label, what it means (the OpenAPI document's descriptions, shortened) and its unit, grouped.
 * Bounds are the document's; the API checks them again and names any bad field.
 */
/** `json`: a setting with a shape of its own (the tax treatment), edited as its JSON. */
export type Unit = 'millicents' | 'cents' | 'count' | 'percent' | 'mb' | 'cpu' | 'minutes' | 'days' | 'hours' | 'text' | 'country' | 'json';

export interface SettingField {
  path: string;
  label: string;
  description: string;
  unit: Unit;
  min?: number;
  max?: number;
  /** Empty means null (the setting's documented default behaviour). */
  nullable?: boolean;
}

export const SETTING_GROUPS: { legend: string; fields: SettingField[] }[] = [
  {
    legend: 'Prices (in 1/1000 cent an hour)',
    fields: [
      {
        path: 'prices.ramMillicentsPerGbHour',
        label: 'RAM, per GiB an hour',
        description: 'Price of 1 GiB (1024 MB) of RAM for one hour.',
        unit: 'millicents',
        min: 0,
        max: 10_000_000,
      },
      {
        path: 'prices.cpuMillicentsPerCoreHour',
        label: 'CPU, per core an hour',
        description: 'Price of one core (cpuPercent 100) for one hour.',
        unit: 'millicents',
        min: 0,
        max: 10_000_000,
      },
      {
        path: 'prices.diskMillicentsPerGbHour',
        label: 'Disk, per GiB an hour',
        description: 'Price of 1 GiB (1024 MB) of disk for one hour.',
        unit: 'millicents',
        min: 0,
        max: 10_000_000,
      },
      {
        path: 'monthlyCapHours',
        label: 'Monthly cap, in hours',
        description:
          'In a calendar month (UTC) a server never pays more than this many hours of its hourly price. Empty charges every hour.',
        unit: 'hours',
        min: 1,
        max: 744,
        nullable: true,
      },
    ],
  },
  {
    legend: 'Credit and balance (in cents)',
    fields: [
      {
        path: 'trialCreditCents',
        label: 'Trial credit',
        description: 'Granted once to every new account.',
        unit: 'cents',
        min: 0,
        max: 10_000_000,
      },
      {
        path: 'minimumBalanceCents',
        label: 'Minimum balance to deploy',
        description: 'A deploy needs at least this balance besides the 24-hour runway.',
        unit: 'cents',
        min: 0,
        max: 10_000_000,
      },
      {
        path: 'lowBalanceThresholdCents',
        label: 'Low-balance threshold',
        description:
          'balance.low fires once when a change leaves the balance below this, and again only after it was back above. An account override replaces it.',
        unit: 'cents',
        min: 0,
        max: 10_000_000,
      },
    ],
  },
  {
    legend: 'Top-ups',
    fields: [
      {
        path: 'topUpBonusPercent',
        label: 'Top-up bonus',
        description: 'Bonus credit added to every paid top-up, in percent.',
        unit: 'percent',
        min: 0,
        max: 100,
      },
      {
        path: 'minimumTopUpCents',
        label: 'Smallest top-up (cents)',
        description: 'Smallest checkout amount (Stripe needs at least 50 cents).',
        unit: 'cents',
        min: 50,
        max: 99_999_999,
      },
      {
        path: 'maximumTopUpCents',
        label: 'Largest top-up (cents)',
        description: 'Largest checkout amount.',
        unit: 'cents',
        min: 50,
        max: 99_999_999,
      },
      {
        path: 'autoTopUpMaxFailures',
        label: 'Auto top-up failures allowed',
        description: 'Consecutive failed auto top-ups (declined, authentication required) after which the rule is turned off.',
        unit: 'count',
        min: 1,
        max: 20,
      },
    ],
  },
  {
    legend: 'Servers',
    fields: [
      {
        path: 'serverCaps.maxRamMb',
        label: 'Largest server: RAM (MB)',
        description: 'Largest RAM one may deploy or resize to.',
        unit: 'mb',
        min: 256,
        max: 1_048_576,
      },
      {
        path: 'serverCaps.maxCpuPercent',
        label: 'Largest server: CPU (%)',
        description: '100 is one core.',
        unit: 'cpu',
        min: 25,
        max: 10_000,
      },
      {
        path: 'serverCaps.maxDiskMb',
        label: 'Largest server: disk (MB)',
        description: 'Largest disk one may deploy or resize to.',
        unit: 'mb',
        min: 512,
        max: 10_485_760,
      },
      {
        path: 'maxServersPerAccount',
        label: 'Servers per account',
        description: 'Active plus suspended servers per account.',
        unit: 'count',
        min: 0,
        max: 10_000,
      },
      {
        path: 'backupsPerServer',
        label: 'Backups included per server',
        description: "Backups every server includes; with the backup slots bought as add-ons, the panel's backup limit. 0: none.",
        unit: 'count',
        min: 0,
        max: 100,
      },
      {
        path: 'schedulesPerServer',
        label: 'Schedules per server',
        description: 'Ours (the panel has no limit); 0: none.',
        unit: 'count',
        min: 0,
        max: 100,
      },
      {
        path: 'suspendedRetentionDays',
        label: 'Delete suspended servers after (days)',
        description: 'Servers suspended this many days are deleted. Empty keeps them forever.',
        unit: 'days',
        min: 1,
        max: 3650,
        nullable: true,
      },
      {
        path: 'suspensionGraceMinutes',
        label: 'Grace before suspension (minutes)',
        description:
          'Servers keep running, and are charged into debt, this long once the balance is at or below zero; then they are suspended. 0 suspends at once; at most 10,080 (7 days).',
        unit: 'minutes',
        min: 0,
        max: 10_080,
      },
      {
        path: 'runwayWarningHours',
        label: 'Runway warnings (hours before suspension)',
        description: 'The balance.runway_warning horizons, as a JSON list of whole hours (1–720, at most 5), e.g. [24, 2]; [] sends none.',
        unit: 'json',
      },
    ],
  },
  {
    legend: 'Add-ons (extras a server may buy)',
    fields: [
      {
        path: 'databasesPerServer',
        label: 'Databases included per server',
        description: "Databases every server has without buying any; with the bought ones, the panel's database limit.",
        unit: 'count',
        min: 0,
        max: 100,
      },
      {
        path: 'portsPerServer',
        label: 'Ports included per server',
        description: "Ports every server has, the primary one counted; with the bought ones, the panel's allocation limit.",
        unit: 'count',
        min: 1,
        max: 100,
      },
      {
        path: 'addons.backupMillicentsPerHour',
        label: 'Extra backup slot, an hour',
        description: "Price of one extra backup slot for one hour, added to the server's hourly price.",
        unit: 'millicents',
        min: 0,
        max: 10_000_000,
      },
      {
        path: 'addons.databaseMillicentsPerHour',
        label: 'Extra database, an hour',
        description: 'Price of one extra database for one hour.',
        unit: 'millicents',
        min: 0,
        max: 10_000_000,
      },
      {
        path: 'addons.portMillicentsPerHour',
        label: 'Extra port, an hour',
        description: 'Price of one extra port (allocation) for one hour.',
        unit: 'millicents',
        min: 0,
        max: 10_000_000,
      },
      {
        path: 'addons.maxBackups',
        label: 'Most extra backup slots per server',
        description: '0: not sold.',
        unit: 'count',
        min: 0,
        max: 100,
      },
      {
        path: 'addons.maxDatabases',
        label: 'Most extra databases per server',
        description: '0: not sold.',
        unit: 'count',
        min: 0,
        max: 100,
      },
      { path: 'addons.maxPorts', label: 'Most extra ports per server', description: '0: not sold.', unit: 'count', min: 0, max: 100 },
    ],
  },
  {
    legend: 'API keys and request rate',
    fields: [
      {
        path: 'maxApiKeysPerAccount',
        label: 'API keys per account',
        description: 'Keys an account may hold (revoked keys do not count). An account override replaces it.',
        unit: 'count',
        min: 0,
        max: 1000,
      },
      {
        path: 'accountRequestsPerMinute',
        label: 'Requests a minute per account',
        description: "All of an account's credentials together, beside each credential's own 240. Never taken below 240.",
        unit: 'count',
        min: 1,
        max: 1_000_000,
      },
      {
        path: 'trialMaxApiKeys',
        label: 'API keys of a trial account',
        description: 'An account with no top-up and no grant yet. Empty: as API keys per account.',
        unit: 'count',
        min: 0,
        max: 1000,
        nullable: true,
      },
      {
        path: 'trialMaxWebhookEndpoints',
        label: 'Webhook endpoints of a trial account',
        description: 'At most the 10 of any account. Empty: 10.',
        unit: 'count',
        min: 0,
        max: 10,
        nullable: true,
      },
    ],
  },
  {
    legend: 'Invoice issuer (printed on every invoice PDF)',
    fields: [
      { path: 'invoiceIssuer.legalName', label: 'Legal name', description: 'The legal name of the seller.', unit: 'text', nullable: true },
      {
        path: 'invoiceIssuer.address.line1',
        label: 'Address line 1',
        description: 'Empty fields are left out.',
        unit: 'text',
        nullable: true,
      },
      { path: 'invoiceIssuer.address.line2', label: 'Address line 2', description: 'Optional.', unit: 'text', nullable: true },
      { path: 'invoiceIssuer.address.postalCode', label: 'Postal code', description: 'Optional.', unit: 'text', nullable: true },
      { path: 'invoiceIssuer.address.city', label: 'City', description: 'Optional.', unit: 'text', nullable: true },
      { path: 'invoiceIssuer.address.region', label: 'Region', description: 'State, province or county.', unit: 'text', nullable: true },
      {
        path: 'invoiceIssuer.address.country',
        label: 'Country',
        description: 'ISO 3166-1 alpha-2 code, upper case (DE, US, …).',
        unit: 'country',
        nullable: true,
      },
      {
        path: 'invoiceIssuer.taxId',
        label: 'Tax id',
        description: 'VAT or other tax id, as it should print.',
        unit: 'text',
        nullable: true,
      },
      { path: 'invoiceIssuer.email', label: 'Contact e-mail', description: 'Printed under the seller.', unit: 'text', nullable: true },
      {
        path: 'invoiceIssuer.footer',
        label: 'Footer',
        description: 'Printed at the foot of every invoice (payment terms, registration).',
        unit: 'text',
        nullable: true,
      },
    ],
  },
  {
    legend: 'Tax (printed on every invoice)',
    fields: [
      {
        path: 'tax',
        label: 'Tax treatment',
        description:
          'One of: {"treatment": "none", "reason": "Not subject to VAT: small business exemption"}; {"treatment": "rates", "label": "VAT", "sellerCountry": "DE", "rates": {"DE": 1900, "FR": 2000}, "otherCountriesReason": null} (basis points: 1900 = 19 %; reverse charge for EU businesses with a valid VAT id); {"treatment": "stripe"} (Stripe Tax). See the API guide, Money: Tax.',
        unit: 'json',
      },
    ],
  },
];

/** The value at a dotted path of an object (undefined when absent). */
export function getPath(object: unknown, path: string): unknown {
  let value = object;
  for (const part of path.split('.')) value = value && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined;
  return value;
}

/** Sets the value at a dotted path, creating the objects on the way. */
export function setPath(object: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let target = object;
  for (const part of parts.slice(0, -1)) {
    target[part] ??= {};
    target = target[part] as Record<string, unknown>;
  }
  target[parts[parts.length - 1]!] = value;
}
