import * as z from 'zod';
import { Uuid, text, int32, Count, Timestamp, PanelId, PanelMb, SafeText } from './common.ts';

/** Panels as the admin group registers and tests them. */

const PanelKey = z.string().trim().min(8).max(512);

const PanelRateLimits = z
  .object({
    applicationPerMinute: int32(1, 100_000).meta({
      description: "The panel's APP_API_APPLICATION_RATELIMIT (240 by default on Pterodactyl, 256 on Pelican).",
    }),
    clientPerMinute: int32(1, 100_000).meta({
      description: "The panel's APP_API_CLIENT_RATELIMIT (720 by default on Pterodactyl, 256 on Pelican).",
    }),
  })
  .strict()
  .meta({
    id: 'PanelRateLimits',
    description:
      "The panel's own per-minute request limits for the key owner. The control plane spends at most 98 % of them in any 62 s, shared by every process and by every instance registered with the same panel URL (a second registration of a panel is refused); the platform's own work keeps a reserve no account can use, each account's writes, reads and control calls have a cap a minute, and an account with few calls over this minute and the previous one has a slice that accounts calling steadily cannot use.",
  });

const PanelKind = z.enum(['pterodactyl', 'pelican']).meta({
  id: 'PanelKind',
  description:
    "The panel's software, detected from routes only one of them has (Pterodactyl's `/api/application/nests`, Pelican's `/api/application/eggs`) at registration and at every instance test; it sets the default `panelRateLimits` (Pterodactyl 240/720, Pelican 256/256). Absent on a panel not reached yet (treated as Pterodactyl).",
});

const BudgetState = z.object({
  limitPerMinute: Count,
  budgetPerMinute: Count.meta({
    description: 'What the control plane spends at most in any 62 s (so in any 60 s window the panel counts): the limit less headroom.',
  }),
  reservedForWrites: Count.meta({
    description:
      'Application API: what customer reads stop short of, kept for customer writes (create, build, delete); 0 for the Client API.',
  }),
  readsPerMinute: Count.meta({
    description: "Where customers' reads (Application) or control calls (Client) stop, once past their first calls.",
  }),
  readsPerAccountPerMinute: Count.meta({ description: "One account's reads (Application) or control calls (Client) a minute." }),
  writesPerAccountPerMinute: Count.meta({ description: "One account's writes a minute (Application)." }),
  systemReserve: Count.meta({
    description: "Kept for the platform's own work (billing suspensions, reconciler, repairs): no account can use it.",
  }),
  newcomerSlice: Count.meta({
    description:
      'Only an account with at most 6 calls over this minute and the previous one may use it: accounts calling at their share cannot keep a new one out.',
  }),
  usedThisMinute: Count.meta({ description: 'Calls counted in the trailing 62 s.' }),
  pausedUntil: Timestamp.nullable().meta({ description: 'Set after the panel answered 429: no call is sent before then.' }),
});

export const CallBudgetState = z
  .object({
    application: BudgetState,
    client: BudgetState,
    sharedWith: z.array(Uuid).max(100).meta({
      description: 'Other instances registered with the same panel (URL compared normalised): they spend this same budget.',
    }),
  })
  .meta({ id: 'CallBudgetState', description: "The panel's shared call budget: its shares and what the trailing window holds." });

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
    panelKind: PanelKind.optional(),
    wingsOrigin: text(500).nullable().meta({ description: "The console's `origin`: Wings' `remote`; null: baseUrl." }),
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
    panelNodeUuids: z.array(z.string().max(64)).max(50).nullable().meta({
      description:
        "The panel's node uuids this instance claims: what identifies the panel, whatever its URL (a second registration of a panel with one of them is refused). Null until the panel's nodes were read (at registration, or by the reconciler's next run).",
    }),
    duplicateOf: Uuid.nullable().meta({
      description:
        'Another instance claims nodes of this panel: the same panel registered twice (before registrations were refused). Its servers are never taken for orphans; delete the duplicate once it hosts none.',
    }),
    databaseHost: z
      .object({
        available: z.boolean().meta({ description: 'The panel found a database host for the server (false: it had none).' }),
        at: Timestamp.meta({ description: 'When that create ran.' }),
      })
      .nullable()
      .meta({
        description:
          "Whether the panel has a database host, as its last database create answered (the panel's APIs do not list database hosts); null until a customer creates a database there.",
      }),
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
/** An origin only (scheme, host, port): what a browser sends as `Origin` and Wings compares exactly. */
const WingsOrigin = BaseUrl.refine((v) => new URL(v).pathname === '/', 'Must be an http(s) origin, without a path').transform(
  (v) => new URL(v).origin,
);

export const CreateInstance = z
  .object({
    name: InstanceName,
    baseUrl: BaseUrl,
    wingsOrigin: WingsOrigin.nullable().optional(),
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
    panelRateLimits: PanelRateLimits.optional().meta({
      description: "Defaults to the panel's own defaults by its detected kind: 240 and 720 on Pterodactyl, 256 and 256 on Pelican.",
    }),
  })
  .strict()
  .meta({ id: 'CreateInstance' });

export const UpdateInstance = z
  .object({
    name: InstanceName.optional(),
    baseUrl: BaseUrl.optional(),
    wingsOrigin: WingsOrigin.nullable().optional(),
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
    panelKind: PanelKind.optional().meta({ description: 'What this test detected (absent: the panel did not say); kept on the instance.' }),
    ok: z.boolean().meta({ description: 'Every check passed.' }),
    latencyMs: Count,
    checks: z.array(z.object({ name: z.enum(['application_api', 'client_api']), ok: z.boolean(), message: text(1000) })).max(2),
    nodes: z.array(
      z.object({
        id: PanelId,
        name: text(191),
        region: text(60)
          .nullable()
          .meta({ description: "The node's region tag: its location `short` code (Pterodactyl) or its first tag (Pelican)." }),
        fqdn: text(255),
        maintenance: z.boolean(),
        memoryMb: PanelMb,
        diskMb: PanelMb,
        allocatedMemoryMb: PanelMb,
        allocatedDiskMb: PanelMb,
      }),
    ),
    serviceUser: z.object({ id: PanelId, username: text(191), email: text(191), admin: z.boolean() }).nullable(),
    warnings: z
      .array(z.object({ code: z.enum(['client_key_is_root_admin']), message: text(500) }))
      .max(1)
      .meta({
        description: '`client_key_is_root_admin`: console tokens carry admin.websocket.*; use a non-admin service user.',
      }),
    callBudget: CallBudgetState,
    lastTest: InstanceLastTest.nullable().meta({
      description:
        'What the instance now records as its last test; null when its keys or URL changed while the test ran (the result was not kept).',
    }),
  })
  .meta({ id: 'InstanceTestReport' });
