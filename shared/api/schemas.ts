import * as z from 'zod';
import { SCOPES } from './scopes.ts';
import { ERROR_STATUS, type ErrorCode } from '../errors.ts';

/**
 * The request and response shapes of the API. The route table (routes.ts) points at these; the
 * routers validate with them and the OpenAPI document is generated from them.
 */

// ---- building blocks -------------------------------------------------------------------------

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
/** A moment as the service writes it (`toISOString()`, 24 characters). */
export const Timestamp = z.iso.datetime().max(32);
/** Ids the panel gives (MySQL unsigned `increments`): eggs, nests, nodes, users. */
export const PanelId = int64(1, 4_294_967_295);

/** Megabytes as the panel stores them (unsigned 32-bit columns). */
export const PanelMb = int64(0, 4_294_967_295);
/** Megabytes left over: negative when a node is allocated past its capacity. */
export const SignedMb = int64(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);

/** The power states Wings reports for a server (its environment's state machine). */
export const PowerState = z.enum(['offline', 'starting', 'running', 'stopping']).meta({ id: 'PowerState' });

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

const cents = (description: string) => SignedCents.meta({ description });

// ---- health ----------------------------------------------------------------------------------

export const Health = z
  .object({
    status: z.literal('ok'),
    version: text(32),
    time: Timestamp,
    instances: z.object({
      total: Count,
      enabled: Count,
    }),
  })
  .meta({ id: 'Health' });

// ---- account ---------------------------------------------------------------------------------

export const Account = z
  .object({
    id: Uuid,
    email: Email,
    balanceCents: cents('Credit balance in cents (paid plus granted credit).'),
    balanceUsd: z.number().meta({ description: 'The same balance in dollars.' }),
    trialGranted: z.boolean(),
    isAdmin: z.boolean(),
    burnMillicentsPerHour: Cents.meta({ description: 'What the active servers cost an hour, exactly, in millicents (1/1000 cent).' }),
    accruedMillicents: int32(0, 999).meta({
      description:
        'Charged hours not yet taken from the balance because together they are below a cent (0–999); the next hourly charge adds to them.',
    }),
    runwayHours: z
      .number()
      .nullable()
      .meta({ description: 'Hours until the balance reaches zero at the current burn (one decimal); null with no burn.' }),
    fundedUntil: Timestamp.nullable().meta({ description: 'When the balance reaches zero at the current burn; null with no burn.' }),
    createdAt: Timestamp,
  })
  .meta({ id: 'Account' });

export const ActivityEntry = z
  .object({
    id: text(128),
    at: Timestamp,
    accountId: Uuid,
    actorEmail: text(254),
    credential: z.object({
      kind: z.enum(['api_key', 'session', 'system']),
      id: text(128),
    }),
    action: text(64).meta({ example: 'keys.create' }),
    target: text(256).nullable().meta({ example: 'key:8b0e…' }),
    result: z.enum(['success', 'failure']),
    status: int32(100, 599).meta({ description: 'HTTP status the call ended with.' }),
    errorCode: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]).nullable(),
    sourceIp: text(45).nullable(),
    requestId: text(128),
    details: z.record(z.string(), z.unknown()).optional(),
  })
  .meta({ id: 'ActivityEntry' });

export const ActivityList = listOf(ActivityEntry, 'ActivityList');

// ---- API keys --------------------------------------------------------------------------------

export const ScopeSchema = z.enum(SCOPES).meta({ id: 'Scope' });

export const ApiKey = z
  .object({
    id: Uuid,
    name: text(100),
    prefix: text(16).meta({ description: 'The first characters of the secret, to recognise the key.', example: 'cp_live_4Fz' }),
    last4: text(4),
    scopes: z.array(ScopeSchema).max(SCOPES.length),
    createdAt: Timestamp,
    expiresAt: Timestamp.nullable(),
    lastUsedAt: Timestamp.nullable().meta({ description: 'Updated at most every 5 minutes.' }),
    revokedAt: Timestamp.nullable(),
    status: z.enum(['active', 'expired', 'revoked']),
  })
  .meta({ id: 'ApiKey' });

export const ApiKeyWithSecret = ApiKey.extend({
  secret: text(64).optional().meta({
    description: 'The key itself. Returned only by the creating call: it is stored as a SHA-256 hash. An idempotent replay omits it.',
  }),
}).meta({ id: 'ApiKeyWithSecret' });

export const ApiKeyList = listOf(ApiKey, 'ApiKeyList');

export const CreateApiKey = z
  .object({
    name: SafeText.trim().min(1).max(100),
    expiresInDays: int32(1, 3650).optional().meta({ description: 'Omit for a key that does not expire.' }),
    scopes: z
      .array(ScopeSchema)
      .min(1)
      .max(SCOPES.length)
      .optional()
      .meta({ description: 'Omit for every scope the caller holds. A key can never hold a scope its creator lacks.' }),
  })
  .strict()
  .meta({ id: 'CreateApiKey' });

export const RevokedKey = z.object({ id: Uuid, revoked: z.literal(true), revokedAt: Timestamp }).meta({ id: 'RevokedKey' });

// ---- admin: accounts, settings ---------------------------------------------------------------

export const AdminAccount = Account.extend({
  serverCount: Count.meta({ description: 'Servers currently active or suspended.' }),
}).meta({ id: 'AdminAccount' });

export const AdminAccountList = listOf(AdminAccount, 'AdminAccountList');

/** Settings are integers with bounds, so no setting can push a ledger sum past the safe-integer range. */
const nonNegative = int32(0, 10_000_000);

export const Settings = z
  .object({
    currency: z.literal('usd'),
    prices: z
      .object({
        ramMillicentsPerGbHour: nonNegative.meta({ description: 'Price of 1 GiB (1024 MB) of RAM for one hour, in 1/1000 cent.' }),
        cpuMillicentsPerCoreHour: nonNegative.meta({ description: 'Price of one core (cpuPercent 100) for one hour, in 1/1000 cent.' }),
        diskMillicentsPerGbHour: nonNegative.meta({ description: 'Price of 1 GiB (1024 MB) of disk for one hour, in 1/1000 cent.' }),
      })
      .strict(),
    trialCreditCents: nonNegative.meta({ description: 'Granted once to every new account.' }),
    minimumBalanceCents: nonNegative.meta({ description: 'A deploy needs at least this balance besides the 24-hour runway.' }),
    serverCaps: z
      .object({
        maxRamMb: int32(256, 1_048_576),
        maxCpuPercent: int32(25, 10_000),
        maxDiskMb: int32(512, 10_485_760),
      })
      .strict()
      .meta({ description: 'Largest server one may deploy or resize to.' }),
    maxServersPerAccount: int32(0, 10_000).meta({ description: 'Active plus suspended servers per account.' }),
    topUpBonusPercent: int32(0, 100).meta({ description: 'Bonus credit added to every paid top-up, in percent.' }),
    minimumTopUpCents: int32(50, 99_999_999).meta({ description: 'Smallest checkout amount (Stripe needs at least 50 cents).' }),
    maximumTopUpCents: int32(50, 99_999_999).meta({ description: 'Largest checkout amount.' }),
    suspendedRetentionDays: int32(1, 3650)
      .nullable()
      .meta({ description: 'Delete servers suspended for this many days; null keeps them forever.' }),
    monthlyCapHours: int32(1, 744).nullable().meta({
      description:
        'Optional monthly cap per server: in a calendar month (UTC) a server never pays more than this many hours of its hourly price (each hour capped at its own price); null (the default) charges every hour. E.g. 672 with a 1.5 ¢ server: at most 1,008 ¢ a month, so a full 31-day month (744 h) costs 1,008 ¢, not 1,116 ¢.',
    }),
  })
  .strict()
  .meta({ id: 'Settings' });

export type SettingsValue = z.infer<typeof Settings>;

/**
 * PUT takes what GET returns, whole or in part, so a client can send back the object it read.
 * Read-only settings are accepted only with the value they have; `currency` is a literal, so its
 * one value is the value it has. Derived from Settings, so a new setting round-trips too.
 */
const readOnly = 'is read-only';

export const SettingsUpdate = Settings.extend({
  currency: z.literal('usd', { error: readOnly }).meta({ description: 'Read-only: accepted only unchanged (400 otherwise).' }),
  prices: Settings.shape.prices.partial().strict(),
  serverCaps: Settings.shape.serverCaps.partial().strict(),
})
  .partial()
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'Give at least one setting to change' })
  .meta({
    id: 'SettingsUpdate',
    description: 'Any subset of the settings, or all of them as GET returns them; omitted fields keep their value.',
  });

// ---- local-only -------------------------------------------------------------------------------

export const DevSessionRequest = z.object({ email: Email }).strict();
export const DevSession = z.object({ token: z.string(), expiresAt: Timestamp });

// ---- instances (admin) and catalog -------------------------------------------------------------

const PanelKey = z.string().trim().min(8).max(512);

const PanelRateLimits = z
  .object({
    applicationPerMinute: int32(1, 100_000).meta({ description: "The panel's APP_API_APPLICATION_RATELIMIT (240 by default)." }),
    clientPerMinute: int32(1, 100_000).meta({ description: "The panel's APP_API_CLIENT_RATELIMIT (720 by default)." }),
  })
  .strict()
  .meta({
    id: 'PanelRateLimits',
    description:
      "The panel's own per-minute request limits for the key owner. The control plane plans to spend 90 % of them, shared by every process; calls that change servers keep a reserved quarter of the Application budget, and one account's reads may take at most a quarter of the rest.",
  });

const BudgetState = z.object({
  limitPerMinute: Count,
  budgetPerMinute: Count.meta({ description: 'What the control plane spends at most a minute (the limit less headroom).' }),
  reservedForWrites: Count.meta({ description: 'Kept for calls that change servers: create, build, suspend, unsuspend, delete.' }),
  readsPerMinute: Count,
  readsPerAccountPerMinute: Count,
  usedThisMinute: Count,
  pausedUntil: Timestamp.nullable().meta({ description: 'Set after the panel answered 429: no call is sent before then.' }),
});

export const CallBudgetState = z
  .object({ application: BudgetState, client: BudgetState })
  .meta({ id: 'CallBudgetState', description: "The panel's shared call budget this minute." });

export const InstanceLastTest = z
  .object({
    at: z.iso.datetime().max(32).meta({ description: 'When the test ran.' }),
    ok: z.boolean().meta({ description: 'Every check of that test passed.' }),
    clientKey: z.enum(['ok', 'refused', 'missing', 'unreachable', 'error']).meta({
      description:
        'What the client key did: `ok` resolved to a panel user, `refused` the panel answered 401/403, `missing` no client key, `unreachable` no answer (timeout, 5xx, 429, call budget), `error` any other failure.',
    }),
    message: z.string().max(500).meta({ description: 'A short account of the outcome (never a key).' }),
  })
  .meta({
    id: 'InstanceLastTest',
    description:
      'The outcome of the last instance test (POST /v1/admin/instances/{id}/test); cleared when the keys or the base URL change.',
  });

export const Instance = z
  .object({
    id: Uuid,
    name: text(100),
    baseUrl: text(500).meta({ description: 'Panel base URL.' }),
    priority: int32(0, 10_000).meta({ description: 'Lower is preferred by placement.' }),
    enabled: z.boolean().meta({ description: 'When false, existing servers keep working and nothing new is placed here.' }),
    hasClientKey: z
      .boolean()
      .meta({ description: 'Whether a client key is set (power, console, files need it). Keys are never returned.' }),
    serviceUserId: PanelId.nullable().meta({ description: 'Panel user owning the client key, resolved by the instance test.' }),
    controlAvailable: z.boolean().meta({
      description: 'A client key is set and the last instance test resolved it to a panel user (false before any test).',
    }),
    lastTest: InstanceLastTest.nullable().meta({ description: 'The last instance test with these keys; null before any.' }),
    serverCount: Count.meta({ description: 'Active and suspended servers on this instance.' }),
    panelRateLimits: PanelRateLimits,
    callBudget: CallBudgetState.optional().meta({
      description: 'Admin list and instance test only: what the shared call budget has spent this minute.',
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'Instance' });

export const InstanceList = z.object({ data: z.array(Instance) }).meta({ id: 'InstanceList' });

const InstanceName = SafeText.trim().min(1).max(100);
const BaseUrl = z
  .string()
  .trim()
  .max(500)
  .refine((v) => {
    try {
      const u = new URL(v);
      return (u.protocol === 'https:' || u.protocol === 'http:') && !u.username && !u.password && !u.search && !u.hash;
    } catch {
      return false;
    }
  }, 'Must be an http(s) URL without credentials, query or fragment')
  .transform((v) => v.replace(/\/+$/, ''));
const Priority = int32(0, 10_000);

export const CreateInstance = z
  .object({
    name: InstanceName,
    baseUrl: BaseUrl,
    appApiKey: PanelKey.meta({
      description: 'Panel application key (ptla_…) with read/write on users, nodes, allocations, servers and eggs.',
      example: '<PANEL_APP_KEY>',
    }),
    clientApiKey: PanelKey.optional().meta({
      description: 'Client key (ptlc_…) of the dedicated service user.',
      example: '<PANEL_CLIENT_KEY>',
    }),
    priority: Priority.default(100).meta({ description: 'Lower is preferred (default 100).' }),
    enabled: z.boolean().default(true),
    panelRateLimits: PanelRateLimits.optional().meta({ description: "Defaults to the panel's own defaults, 240 and 720." }),
  })
  .strict()
  .meta({ id: 'CreateInstance' });

export const UpdateInstance = z
  .object({
    name: InstanceName.optional(),
    baseUrl: BaseUrl.optional(),
    appApiKey: PanelKey.optional(),
    clientApiKey: PanelKey.nullable().optional().meta({ description: 'null removes the client key.' }),
    priority: Priority.optional(),
    enabled: z.boolean().optional(),
    panelRateLimits: PanelRateLimits.optional(),
  })
  .strict()
  .refine((v) => Object.keys(v).length > 0, { message: 'Give at least one field to change' })
  .meta({ id: 'UpdateInstance' });

export const DeletedInstance = z.object({ id: Uuid, deleted: z.literal(true) }).meta({ id: 'DeletedInstance' });

export const InstanceTestReport = z
  .object({
    instanceId: Uuid,
    ok: z.boolean().meta({ description: 'Every check passed.' }),
    latencyMs: Count,
    checks: z.array(z.object({ name: z.enum(['application_api', 'client_api']), ok: z.boolean(), message: text(1000) })).max(2),
    nodes: z.array(
      z.object({
        id: PanelId,
        name: text(191),
        region: text(60).nullable().meta({ description: "The node's location `short` code: its region tag." }),
        fqdn: text(255),
        maintenance: z.boolean(),
        memoryMb: PanelMb,
        diskMb: PanelMb,
        allocatedMemoryMb: PanelMb,
        allocatedDiskMb: PanelMb,
      }),
    ),
    serviceUser: z.object({ id: PanelId, username: text(191), email: text(191), admin: z.boolean() }).nullable(),
    callBudget: CallBudgetState,
    lastTest: InstanceLastTest.nullable().meta({
      description:
        'What the instance now records as its last test; null when its keys or URL changed while the test ran (the result was not kept).',
    }),
  })
  .meta({ id: 'InstanceTestReport' });

export const PublicInstance = z
  .object({
    id: Uuid,
    name: text(100),
    priority: int32(0, 10_000),
    controlAvailable: z.boolean().meta({
      description:
        "Power, console and files are expected to work: the instance has a client key and the operator's last test of it succeeded (false until then).",
    }),
  })
  .meta({ id: 'PublicInstance' });

export const PublicInstanceList = z.object({ data: z.array(PublicInstance) }).meta({ id: 'PublicInstanceList' });

export const Region = z
  .object({
    region: text(60).meta({ description: 'Region tag: the panel location `short` code.', example: 'eu-central' }),
    name: text(65_535).nullable().meta({ description: 'The location description.' }),
    instances: z.array(Uuid),
    nodes: Count.meta({ description: 'Nodes that can take servers (not in maintenance, instance enabled).' }),
    freeMemoryMb: SignedMb.meta({
      description: 'Sum over those nodes of capacity × (1 + overallocate %) − allocated (negative when overallocated).',
    }),
    freeDiskMb: SignedMb,
    largestFreeMemoryMb: SignedMb.meta({ description: 'Biggest server (RAM) one node can still take.' }),
  })
  .meta({ id: 'Region' });

export const RegionList = z
  .object({
    data: z.array(Region),
    unavailableInstances: z.array(Uuid).meta({ description: 'Enabled instances whose panel did not answer.' }),
  })
  .meta({ id: 'RegionList' });

export const EggSummary = z
  .object({
    instanceId: Uuid,
    instanceName: text(100),
    eggId: PanelId,
    name: text(191),
    description: text(65_535).nullable(),
    nestId: PanelId,
    nestName: text(191),
    dockerImages: z.record(text(191), text(1024)),
  })
  .meta({ id: 'EggSummary' });

export const EggList = z.object({ data: z.array(EggSummary), unavailableInstances: z.array(Uuid) }).meta({ id: 'EggList' });

export const EggVariable = z
  .object({
    env: text(191).meta({ example: 'SERVER_JARFILE' }),
    name: text(191),
    description: text(65_535),
    default: text(65_535)
      .nullable()
      .meta({ description: 'Used when a deploy omits the variable. Hidden (null) for variables the panel marks not viewable.' }),
    editable: z.boolean().meta({ description: 'Only editable variables may be set at deploy.' }),
    rules: text(65_535).meta({ description: 'Laravel validation rules the value must pass.', example: 'required|string|max:20' }),
  })
  .meta({ id: 'EggVariable' });

export const EggDetail = EggSummary.extend({
  startup: text(65_535),
  defaultDockerImage: text(1024),
  variables: z.array(EggVariable),
}).meta({ id: 'EggDetail' });

export const EggParams = z.object({
  instanceId: Uuid,
  eggId: z.coerce
    .number()
    .int()
    .min(1)
    .max(2 ** 31)
    .meta({ format: 'int64' }),
});

// ---- servers ------------------------------------------------------------------------------------

export const ServerStatus = z.enum(['active', 'suspended', 'deleted']).meta({ id: 'ServerStatus' });

export const ResourcesSchema = z.object({ ramMb: Count, cpuPercent: Count, diskMb: Count }).meta({ id: 'Resources' });

export const Server = z
  .object({
    id: Uuid,
    instanceId: Uuid,
    identifier: text(8).meta({ description: 'Short panel identifier (8 characters).' }),
    uuid: text(36).meta({ description: 'Panel uuid.' }),
    name: text(60),
    eggId: PanelId,
    region: text(60).nullable().meta({ description: 'Region tag of the node the server runs on.' }),
    resources: ResourcesSchema,
    priceCentsPerHour: Cents.meta({
      description: 'The exact hourly price rounded UP to whole cents, for display; what is charged is `priceMillicentsPerHour`.',
    }),
    priceMillicentsPerHour: Cents.meta({
      description:
        'The exact hourly price in millicents (1/1000 cent). The hourly pass charges exact amounts: each ledger entry is whole cents, and what is below a cent is carried on the account to the next hour (`accruedMillicents` on GET /v1/account), so an account pays the sum of its exact prices to within one cent, never more.',
    }),
    status: ServerStatus,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    suspendedAt: Timestamp.nullable(),
    suspendedReason: z.enum(['balance', 'budget']).nullable().meta({
      description:
        'Why the platform suspended the server: `balance` (the balance reached zero) or `budget` (the monthly budget was reached with the `suspend` action). Null unless suspended; unsuspension clears it.',
    }),
    deletedAt: Timestamp.nullable(),
  })
  .meta({ id: 'Server' });

export const LiveState = z
  .object({
    available: z.boolean().meta({ description: 'False when the panel could not be asked; the stored fields above still hold.' }),
    reason: z
      .enum(['panel_busy', 'panel_unreachable', 'panel_error', 'refreshing', 'deleted'])
      .optional()
      .meta({
        description:
          'Why `available` is false (absent when true). panel_busy: the panel is rate limiting, or the shared panel call budget is spent; ' +
          'panel_unreachable: the panel did not answer in time, could not be reached or failed (5xx); ' +
          'panel_error: the panel refused the request (for example the instance key); ' +
          'refreshing: another request is asking the panel right now and the last known state is too old to show as current; ' +
          'deleted: the server is deleted and the panel is not asked. The fields below are the last known state, or null.',
      }),
    asOf: Timestamp.nullable().meta({
      description: 'When the panel gave the state shown (it is cached for every caller, 20 s by default); null if it never has.',
    }),
    installStatus: z.enum(['installing', 'installed', 'install_failed']).nullable(),
    powerState: PowerState.nullable().meta({
      description: 'The power state Wings reports; null without a client key or while installing.',
    }),
    suspendedOnPanel: z.boolean().nullable(),
    resources: z
      .object({
        memoryBytes: z.number(),
        cpuAbsolute: z.number(),
        diskBytes: z.number(),
        networkRxBytes: z.number(),
        networkTxBytes: z.number(),
        uptimeMs: z.number(),
      })
      .nullable(),
  })
  .meta({ id: 'LiveState' });

export const ServerWithLive = Server.extend({ live: LiveState }).meta({ id: 'ServerWithLive' });
export const ServerList = listOf(Server, 'ServerList');

const ServerName = SafeText.trim().min(3).max(60);
const RamMb = int32(256, 1_048_576);
const CpuPercent = int32(25, 10_000);
const DiskMb = int32(512, 10_485_760);

export const CreateServer = z
  .object({
    name: ServerName,
    eggId: z
      .number()
      .int()
      .min(1)
      .max(2 ** 31)
      .meta({ format: 'int64' }),
    ramMb: RamMb.meta({ description: 'At least 256; at most the platform cap (settings.serverCaps.maxRamMb).' }),
    cpuPercent: CpuPercent.meta({ description: '100 = one core; at least 25.' }),
    diskMb: DiskMb.meta({ description: 'At least 512.' }),
    instanceId: Uuid.optional().meta({ description: 'Auto-picked by placement when omitted (among instances that have this egg id).' }),
    region: z.string().trim().min(1).max(60).nullable().optional().meta({ description: 'Region tag; null or omitted means any.' }),
    environment: z
      .record(z.string().min(1).max(191), z.string().max(4096))
      .refine((v) => Object.keys(v).length <= 100, 'at most 100 variables')
      .optional()
      .meta({ description: 'Egg variable name to value; omitted variables take the egg default. Only editable variables may be set.' }),
    dockerImage: z
      .string()
      .trim()
      .min(1)
      .max(191)
      .optional()
      .meta({ description: "One of the egg's docker images; the egg default when omitted." }),
  })
  .strict()
  .meta({ id: 'CreateServer' });

export const ResizeServer = z.object({ ramMb: RamMb, cpuPercent: CpuPercent, diskMb: DiskMb }).strict().meta({ id: 'ResizeServer' });

export const DeletedServer = z.object({ id: Uuid, status: z.literal('deleted'), deletedAt: Timestamp }).meta({ id: 'DeletedServer' });

export const PowerSignal = z
  .object({ signal: z.enum(['start', 'stop', 'restart', 'kill']) })
  .strict()
  .meta({ id: 'PowerSignal' });
export const PowerResult = z.object({ id: Uuid, signal: z.enum(['start', 'stop', 'restart', 'kill']), accepted: z.literal(true) }).meta({
  id: 'PowerResult',
  description: 'The panel accepted the signal; the state changes shortly after (watch resources or the console).',
});

/** No C0 or C1 controls (NEL included) and no line or paragraph separators: a command is one console line. */
const OneLine = z.string().regex(/^[^\u0000-\u001f\u007f-\u009f\u2028\u2029]*$/, 'must be a single line without control characters');

export const ConsoleCommand = z
  .object({
    command: OneLine.min(1)
      .max(1024)
      .refine((v) => v.trim().length > 0, 'must not be empty or only whitespace'),
  })
  .strict()
  .meta({ id: 'ConsoleCommand' });
export const CommandResult = z.object({ id: Uuid, sent: z.literal(true) }).meta({ id: 'CommandResult' });

export const LiveUsage = z
  .object({
    attributes: z.object({
      current_state: PowerState,
      is_suspended: z.boolean(),
      resources: z.object({
        memory_bytes: z.number(),
        cpu_absolute: z.number().meta({ description: 'Percent, 100 = one core.' }),
        disk_bytes: z.number(),
        network_rx_bytes: z.number(),
        network_tx_bytes: z.number(),
        uptime: z.number().meta({ description: 'Milliseconds since the container started.' }),
      }),
    }),
  })
  .meta({ id: 'LiveUsage', description: "The panel's counters, as the panel reports them (it caches them up to 20 s)." });

export const ConsoleCredentials = z
  .object({
    socket: z.url().max(2048).meta({
      description:
        'The server\'s console: a Wings websocket (wss://<node>:<port>/api/servers/<uuid>/ws). Open it, send {"event":"auth","args":[token]}, wait for `auth success`; frames are JSON {event, args}.',
    }),
    token: text(4096).meta({ description: 'The JWT for the `auth` event; it is only good for this server.' }),
    expiresAt: Timestamp.meta({
      description:
        'When the token expires (ISO 8601, about 10 minutes). On `token expiring` fetch fresh credentials and send `auth` again on the same socket; on `token expired` or `jwt error` do the same. Wings drops every token when it restarts.',
    }),
    origin: z.url().max(2048).meta({
      description:
        "The panel URL: a non-browser client must send it as the Origin header, or Wings refuses the upgrade with 403. A browser sends the page's own origin, so the operator must add the dashboard's origin to every node's Wings `allowed_origins` (config.yml).",
    }),
    websocket: z
      .object({ token: text(4096), socket: z.url().max(2048).meta({ description: 'wss:// address of the console.' }) })
      .meta({ description: 'The same `token` and `socket`, kept for older clients.' }),
    expiresInSeconds: int32(0, 3600).meta({ description: 'About 600 (kept for older clients; prefer `expiresAt`).' }),
  })
  .meta({ id: 'ConsoleCredentials' });

/** Paths inside the server: relative or absolute, never `..`, never NUL or control characters. */
export const FilePath = z
  .string()
  .min(1)
  .max(1024)
  .refine((p) => !/[\u0000-\u001f\u007f]/.test(p), 'must not contain control characters')
  .refine((p) => !p.split(/[\\/]/).includes('..'), "must not contain '..'")
  .meta({ id: 'FilePath' });

export const MAX_FILE_CONTENT_BYTES = 524_288;

export const FileEntry = z
  .object({
    name: text(255),
    mode: text(32),
    size: int64(0, Number.MAX_SAFE_INTEGER),
    isFile: z.boolean(),
    isSymlink: z.boolean(),
    mimetype: text(255),
    createdAt: z.iso.datetime({ offset: true }).max(64),
    modifiedAt: z.iso.datetime({ offset: true }).max(64),
  })
  .meta({ id: 'FileEntry' });

export const FileList = z.object({ directory: text(4096), data: z.array(FileEntry) }).meta({ id: 'FileList' });
export const DirectoryQuery = z.object({ directory: FilePath.optional() }).strict();
export const FileQuery = z.object({ file: FilePath }).strict();
export const FileContents = z.object({ file: text(4096), content: text(4_194_304) }).meta({ id: 'FileContents' });
export const WriteFile = z
  .object({
    file: FilePath,
    content: text(MAX_FILE_CONTENT_BYTES).refine(
      (c) => Buffer.byteLength(c) <= MAX_FILE_CONTENT_BYTES,
      `must be at most ${MAX_FILE_CONTENT_BYTES} bytes`,
    ),
  })
  .strict()
  .meta({ id: 'WriteFile' });
export const WriteResult = z
  .object({ file: text(4096), written: z.literal(true), bytes: int32(0, MAX_FILE_CONTENT_BYTES) })
  .meta({ id: 'WriteResult' });
export const DownloadLink = z
  .object({
    file: text(4096),
    url: z.url().max(8192).meta({ description: 'Signed, single-use address on the node, valid about 15 minutes; no key needed.' }),
  })
  .meta({ id: 'DownloadLink' });
export const DeleteFiles = z
  .object({
    root: FilePath.optional().meta({ description: 'Directory the names are relative to (default /).' }),
    files: z.array(FilePath).min(1).max(100),
  })
  .strict()
  .meta({ id: 'DeleteFiles' });
export const DeleteFilesResult = z.object({ root: text(4096), deleted: z.array(text(4096)).max(100) }).meta({ id: 'DeleteFilesResult' });

export const AdminServer = Server.extend({ accountId: Uuid }).meta({ id: 'AdminServer' });
export const AdminServerList = listOf(AdminServer, 'AdminServerList');

// ---- money: ledger, budgets, billing, invoices --------------------------------------------------

export const LedgerEntryView = z
  .object({
    seq: int32(1, INT32_MAX).meta({ description: 'Position in the account ledger (1, 2, 3, …).' }),
    type: z.enum(['trial', 'topup', 'bonus', 'grant', 'deduction', 'charge', 'refund']),
    amountCents: SignedCents.meta({ description: 'Signed: credits positive, charges and deductions negative.' }),
    balanceAfterCents: SignedCents,
    granted: z.boolean().meta({ description: 'Trial, bonus and admin grants: credit that was not paid for.' }),
    reference: z.object({
      serverId: text(64).nullable(),
      invoiceId: text(64).nullable(),
      invoiceNumber: text(32).nullable(),
      hour: Timestamp.nullable().meta({ description: 'Hourly charges: the UTC hour charged (its start).' }),
      note: text(500).nullable(),
      lines: z
        .array(z.object({ serverId: text(64), millicents: Cents }))
        .max(10_000)
        .meta({ description: 'Hourly charges: each server and its exact price for the hour, in millicents.' }),
      accruedBeforeMillicents: int32(0, 999)
        .nullable()
        .meta({ description: 'Hourly charges: what was below a cent before this entry (carried from earlier hours).' }),
      accruedAfterMillicents: int32(0, 999).nullable().meta({
        description:
          'Hourly charges: what is below a cent after it, carried to the next hour. amountCents = −floor((before + Σ lines) / 1000).',
      }),
    }),
    at: Timestamp,
  })
  .meta({ id: 'LedgerEntry' });

export const LedgerList = listOf(LedgerEntryView, 'LedgerList');

export const BudgetAction = z.enum(['refuse', 'suspend']).meta({
  id: 'BudgetAction',
  description:
    '`refuse`: at the cap, deploys and upsizes are refused. `suspend`: also suspend the running servers until the month ends or the cap is raised.',
});

export const Budget = z
  .object({
    monthlyCapCents: int32(0, 100_000_000).nullable().meta({ description: 'null: no cap.' }),
    action: BudgetAction,
    month: text(7).meta({ example: '2026-11' }),
    spentCents: Cents.meta({ description: 'Hourly charges this UTC month.' }),
    burnCentsPerHour: Cents.meta({ description: 'Current hourly price of the active servers, rounded up to cents.' }),
    burnMillicentsPerHour: Cents.meta({ description: 'Current exact hourly price of the active servers, in millicents.' }),
    projectedCents: Cents.meta({ description: 'Spent plus the current exact burn until the month ends, rounded up.' }),
    remainingCents: SignedCents.nullable().meta({ description: 'Cap minus spent (null without a cap).' }),
    capReached: z.boolean(),
  })
  .meta({ id: 'Budget' });

export const BudgetUpdate = z
  .object({ monthlyCapCents: int32(0, 100_000_000).nullable(), action: BudgetAction.default('refuse') })
  .strict()
  .meta({ id: 'BudgetUpdate' });

export const BillingConfig = z
  .object({
    currency: z.literal('usd'),
    minimumTopUpCents: int32(50, 99_999_999),
    maximumTopUpCents: int32(50, 99_999_999),
    bonusPercent: int32(0, 100),
    paymentsEnabled: z.boolean().meta({ description: 'Checkout works (Stripe configured, or the local sandbox).' }),
    provider: z.enum(['stripe', 'sandbox']),
  })
  .meta({ id: 'BillingConfig' });

const ReturnUrl = z
  .string()
  .max(2000)
  .refine((v) => {
    try {
      const u = new URL(v);
      return u.protocol === 'https:' || u.hostname === '127.0.0.1' || u.hostname === 'localhost';
    } catch {
      return false;
    }
  }, 'must be an https URL')
  .meta({ format: 'uri' });

export const CheckoutRequest = z
  .object({
    amountCents: int32(1, 99_999_999).meta({ description: 'Between the minimum and maximum top-up of GET /v1/billing/config.' }),
    successUrl: ReturnUrl.optional().meta({
      description: 'Where the payment page sends the customer after paying (default: CHECKOUT_SUCCESS_URL).',
    }),
    cancelUrl: ReturnUrl.optional().meta({ description: 'Where the payment page sends the customer who cancels.' }),
  })
  .strict()
  .meta({ id: 'CheckoutRequest' });

export const CheckoutResponse = z
  .object({
    url: z.url().max(8192).meta({ description: 'Send the customer to this hosted payment page.' }),
    invoiceNumber: text(32).meta({ example: 'INV-2026-000042' }),
    invoiceId: Uuid,
  })
  .meta({ id: 'CheckoutResponse' });

export const InvoiceStatus = z.enum(['open', 'paid', 'void']).meta({ id: 'InvoiceStatus' });

/**
 * An invoice separates what the card is charged (`lineItems`, summing to `totalCents`) from what
 * the balance receives (`credits`, summing to `creditedCents`): the bonus is credit given, not
 * something sold, so it is a credit and never a line of the charge.
 */
const InvoiceLine = z.object({ type: z.enum(['topup']), description: text(500), amountCents: Cents }).meta({ id: 'InvoiceLine' });

const InvoiceCredit = z
  .object({
    type: z.enum(['topup', 'bonus']).meta({ description: 'topup: the amount paid; bonus: the bonus rate applied to it (rounded down).' }),
    description: text(500),
    amountCents: Cents,
  })
  .meta({ id: 'InvoiceCredit' });

export const Invoice = z
  .object({
    id: Uuid,
    number: text(32).meta({ description: 'Sequential and gapless per year.', example: 'INV-2026-000042' }),
    status: InvoiceStatus,
    currency: z.literal('usd'),
    amountCents: Cents.meta({ description: 'The top-up the customer pays.' }),
    bonusPercent: int32(0, 100).meta({ description: 'Bonus rate fixed when the checkout started.' }),
    lineItems: z.array(InvoiceLine).max(1).meta({ description: 'What the card is charged for: the top-up. They sum to totalCents.' }),
    totalCents: Cents.meta({ description: 'The sum of lineItems: the amount charged to the card.' }),
    paidCents: Cents.meta({ description: 'What the card paid: totalCents once paid, 0 while open or void.' }),
    credits: z.array(InvoiceCredit).max(2).meta({
      description: 'What the balance received, one entry per ledger entry: the top-up and the bonus (when above 0). Empty until paid.',
    }),
    creditedCents: Cents.meta({ description: 'The sum of credits: top-up plus bonus (0 until paid).' }),
    createdAt: Timestamp,
    paidAt: Timestamp.nullable(),
    voidedAt: Timestamp.nullable(),
    payment: z.object({
      provider: z.enum(['stripe', 'sandbox']),
      sessionId: text(255).nullable(),
      paymentIntentId: text(255).nullable(),
    }),
  })
  .meta({
    id: 'Invoice',
    description:
      'What the card is charged (lineItems, summing to totalCents; paidCents once paid) and what the balance receives (credits, summing to creditedCents): the bonus is a credit, never a charged line.',
  });

export const InvoiceList = listOf(Invoice, 'InvoiceList');

export const AdminCredit = z
  .object({
    amountCents: int32(-10_000_000, 10_000_000)
      .refine((v) => v !== 0, 'must not be 0')
      .meta({ description: 'Positive grants, negative deducts (the balance may go below zero).' }),
    note: SafeText.trim().min(1).max(500),
  })
  .strict()
  .meta({ id: 'AdminCredit' });

export const AdminCreditResult = z
  .object({ accountId: Uuid, entry: LedgerEntryView, balanceCents: SignedCents })
  .meta({ id: 'AdminCreditResult' });

/** Stripe's event as delivered: the raw body, signed over its bytes; no longer than any body the service reads (1 MiB). */
export const StripeEventPayload = text(1_048_576).meta({
  description: 'The event as Stripe sends it (JSON), verified against `Stripe-Signature`.',
});

/** What the webhook did with an event (Stripe only needs the 2xx; the outcome is for logs and tests). */
export const WebhookOutcome = z.enum([
  'credited',
  'already_fulfilled',
  'amount_mismatch',
  'awaiting_payment',
  'voided',
  'kept_open',
  'kept_paid',
  'kept_void',
  'unknown_invoice',
  'ignored',
]);
export type WebhookOutcome = z.infer<typeof WebhookOutcome>;
export const WebhookAck = z.object({ received: z.literal(true), outcome: WebhookOutcome }).meta({ id: 'WebhookAck' });

export const BillingRunRequest = z.object({ at: z.iso.datetime({ offset: true }).optional() }).strict();
export const BillingSummary = z
  .object({
    at: Timestamp,
    throughHour: z.string().nullable().meta({ description: 'Last UTC hour billed (its start).' }),
    shards: z.number().int(),
    serverHoursCharged: z.number().int(),
    servers: z.number().int(),
    accounts: z.number().int(),
    cents: z.number().int(),
    suspended: z.number().int(),
    unsuspended: z.number().int(),
    deletedByRetention: z.number().int(),
    lowBalanceWarnings: z.number().int(),
    errors: z.number().int().meta({ description: 'Accounts or shards whose charging failed; the next pass covers them again.' }),
    panelErrors: z
      .number()
      .int()
      .meta({ description: 'Suspensions, unsuspensions or retention deletes the panel refused; retried next pass.' }),
  })
  .meta({ id: 'BillingSummary' });

export const ReconcileReport = z
  .object({
    instances: z.number().int(),
    panelServers: z.number().int(),
    orphansRemoved: z.number().int(),
    recordsClosed: z.number().int(),
    limitsRestored: z.number().int(),
    errors: z.number().int(),
  })
  .meta({ id: 'ReconcileReport' });

// ---- outbound webhooks: endpoints, deliveries, events ----------------------------------------

/**
 * The event types an endpoint can subscribe to. The same list as EVENT_TYPES
 * (shared/webhooks/events.ts), spelled here because shared/api may not import shared/webhooks
 * (it imports shared/db, which imports shared/api); shared/webhooks/endpoints.ts fails to compile
 * when the two differ.
 */
export const WEBHOOK_EVENT_TYPES = [
  'server.created',
  'server.resized',
  'server.suspended',
  'server.unsuspended',
  'server.deleted',
  'balance.low',
  'invoice.paid',
  'invoice.void',
  'ledger.entry',
  'webhook_endpoint.disabled',
] as const;

export const EventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES).meta({ id: 'EventType' });

const WebhookUrl = z.string().max(2048).meta({
  format: 'uri',
  description: 'Where events are sent: https (in the local stack also plain http on loopback, e.g. http://127.0.0.1:4000/hook).',
});
const WebhookEvents = z
  .array(EventTypeSchema)
  .max(WEBHOOK_EVENT_TYPES.length)
  .refine((v) => new Set(v).size === v.length, 'must not repeat an event type');
const WebhookDescription = SafeText.trim().max(200);

export const WebhookEndpoint = z
  .object({
    id: Uuid,
    url: text(2048),
    events: z
      .array(EventTypeSchema)
      .max(WEBHOOK_EVENT_TYPES.length)
      .meta({ description: 'The event types sent to it; empty: every type.' }),
    description: text(200).nullable(),
    enabled: z.boolean(),
    disabledReason: text(64)
      .nullable()
      .meta({ description: '`failing`: the service disabled it after 3 days of failed deliveries; null when enabled or disabled by you.' }),
    failingSince: Timestamp.nullable().meta({ description: 'Since when deliveries fail without a success; null while healthy.' }),
    previousSecretExpiresAt: Timestamp.nullable().meta({
      description: 'After a rotation: until when the previous secret still signs (24 hours); null otherwise.',
    }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'WebhookEndpoint' });

export const WebhookEndpointWithSecret = WebhookEndpoint.extend({
  secret: text(64).optional().meta({
    description: 'The signing secret (`whsec_…`). Returned only by the creating call; an idempotent replay omits it.',
  }),
}).meta({ id: 'WebhookEndpointWithSecret' });

export const WebhookEndpointList = listOf(WebhookEndpoint, 'WebhookEndpointList');

export const CreateWebhookEndpoint = z
  .object({
    url: WebhookUrl,
    events: WebhookEvents.optional().meta({ description: 'Omit or leave empty for every event type.' }),
    description: WebhookDescription.optional(),
  })
  .strict()
  .meta({ id: 'CreateWebhookEndpoint' });

export const UpdateWebhookEndpoint = z
  .object({
    url: WebhookUrl.optional(),
    events: WebhookEvents.optional().meta({ description: 'Empty: every event type.' }),
    enabled: z.boolean().optional().meta({ description: 'true re-enables an endpoint the service disabled (and clears why).' }),
    description: WebhookDescription.nullable().optional(),
  })
  .strict()
  .meta({ id: 'UpdateWebhookEndpoint' });

export const WebhookSecretRotation = z
  .object({
    secret: text(64).meta({ description: 'The new signing secret (`whsec_…`), shown once.' }),
    previousSecretExpiresAt: Timestamp.meta({ description: 'Until then the previous secret signs too (a second signature).' }),
  })
  .meta({ id: 'WebhookSecretRotation' });

export const WebhookDelivery = z
  .object({
    id: Uuid,
    endpointId: Uuid,
    eventId: Uuid,
    eventType: EventTypeSchema,
    status: z.enum(['pending', 'succeeded', 'failed']),
    attempts: z
      .array(
        z.object({
          at: Timestamp,
          status: int32(100, 599).nullable().meta({ description: 'HTTP status the receiver answered; null without an answer.' }),
          durationMs: int32(0, INT32_MAX),
          error: text(500).nullable(),
          responseExcerpt: text(1024).nullable(),
        }),
      )
      .max(100),
    nextAttemptAt: Timestamp.nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .meta({ id: 'WebhookDelivery' });

export const WebhookDeliveryList = listOf(WebhookDelivery, 'WebhookDeliveryList');

export const DeliveryParams = z.object({ id: Uuid, deliveryId: Uuid });

export const Event = z
  .object({
    id: Uuid,
    type: EventTypeSchema,
    createdAt: Timestamp,
    data: z.record(z.string(), z.unknown()).meta({
      description:
        'What happened: the server view (server.*), the invoice view (invoice.*), the ledger entry (ledger.entry), `{ balanceCents, thresholdCents }` (balance.low).',
    }),
  })
  .meta({ id: 'Event' });

export const EventList = listOf(Event, 'EventList');

export const EventsQuery = ListQuery.extend({
  type: EventTypeSchema.optional().meta({ description: 'Only events of this type.' }),
});

export const DeletedWebhookEndpoint = z
  .object({
    id: Uuid,
    deleted: z.literal(true),
    stoppedDeliveries: Count.meta({ description: 'Pending deliveries that will not be sent.' }),
  })
  .meta({ id: 'DeletedWebhookEndpoint' });
