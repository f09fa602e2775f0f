import { SERVER_PERMISSIONS } from '../server-permissions.ts';
import * as z from 'zod';
import { SftpAccess } from './sftp.ts';
import { Addons } from './addons.ts';
import { ServerAllocation } from './network.ts';
import { ServerSubdomain, SubdomainName } from './subdomains.ts';
import { Uuid, text, int32, int64, Count, Cents, Timestamp, PanelId, SafeText, listOf, Labels, ListQuery, EggVariables } from './common.ts';

/** Servers, their control and their files (servers group). */

/** The power states Wings reports for a server (its environment's state machine). */
export const PowerState = z.enum(['offline', 'starting', 'running', 'stopping']).meta({ id: 'PowerState' });

export const ServerStatus = z.enum(['active', 'suspended', 'deleted']).meta({ id: 'ServerStatus' });

export const ResourcesSchema = z.object({ ramMb: Count, cpuPercent: Count, diskMb: Count }).meta({ id: 'Resources' });

/** Where players connect: the server's primary allocation on the panel. */
export const ServerAddress = z
  .object({
    host: text(255).meta({ description: 'Alias, else node FQDN, else ip.' }),
    ip: text(255),
    alias: text(255).nullable(),
    port: int32(1, 65_535),
  })
  .meta({ id: 'ServerAddress' });

export const Server = z
  .object({
    id: Uuid,
    instanceId: Uuid,
    identifier: text(8).meta({ description: 'Short panel identifier (8 characters).' }),
    uuid: text(36).meta({ description: 'Panel uuid.' }),
    name: text(60),
    eggId: PanelId,
    region: text(60).nullable().meta({ description: 'Region tag of the node the server runs on.' }),
    address: ServerAddress.nullable().meta({ description: 'Where to connect; null on old servers.' }),
    ports: z.array(ServerAddress).max(100).meta({ description: 'The further allocations (not the primary).' }),
    addresses: z.array(ServerAllocation).max(100).meta({
      description: 'Every allocation, the primary first (the same as `address`), then the others by port.',
    }),
    sftp: SftpAccess,
    subdomain: ServerSubdomain.nullable().meta({ description: "The server's name under the platform's DNS zone; null: none." }),
    planId: Uuid.optional().meta({ description: 'Its plan; absent: a custom size.' }),
    resources: ResourcesSchema,
    priceCentsPerHour: Cents.meta({
      description: 'The exact hourly price rounded UP to whole cents, for display; what is charged is `priceMillicentsPerHour`.',
    }),
    priceMillicentsPerHour: Cents.meta({
      description:
        'The exact hourly price charged, in millicents (1/1000 cent); what is below a cent carries to the next hour (`accruedMillicents` on GET /v1/account), so an account pays its exact prices to within one cent, never more.',
    }),
    status: ServerStatus,
    createdAt: Timestamp,
    updatedAt: Timestamp,
    suspendedAt: Timestamp.nullable(),
    suspendedReason: z.enum(['balance', 'budget', 'admin']).nullable().meta({
      description:
        'Why the platform suspended the server: `balance` (the balance reached zero), `budget` (the monthly budget was reached with the `suspend` action) or `admin` (an operator did; only an operator lifts it). Null unless suspended; unsuspension clears it.',
    }),
    deletedAt: Timestamp.nullable(),
    labels: Labels,
    addons: Addons.meta({ description: 'Extras bought beyond what every server includes (zeros when none); part of the hourly price.' }),
    // Shared access (shared/servers/shares.ts): present only on another account's server shared with the caller.
    shared: z.literal(true).optional().meta({ description: "Present (true) on another account's server shared with you." }),
    sharedBy: text(254).optional().meta({ description: 'The e-mail of the account that shared the server with you.' }),
    permissions: z
      .array(z.enum(SERVER_PERMISSIONS))
      .max(SERVER_PERMISSIONS.length)
      .optional()
      .meta({ description: 'What you may do on a server shared with you (`read-only` is implied by every other).' }),
  })
  .meta({ id: 'Server' });

/** The usage counters Wings reports, named like the rest of the API. */
export const LiveResources = z
  .object({
    memoryBytes: z.number(),
    cpuAbsolute: z.number().meta({ description: 'Percent, 100 = one core.' }),
    diskBytes: z.number(),
    networkRxBytes: z.number(),
    networkTxBytes: z.number(),
    uptimeMs: z.number().meta({ description: 'Milliseconds since the container started.' }),
  })
  .meta({ id: 'LiveResources' });

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
    resources: LiveResources.nullable(),
  })
  .meta({ id: 'LiveState' });

export const ServerWithLive = Server.extend({ live: LiveState }).meta({ id: 'ServerWithLive' });
export const ServerList = listOf(Server, 'ServerList');

/** A text filter: as every query string, no control characters and no `..` path segment. */
const QueryText = SafeText.min(1)
  .max(60)
  .refine((v) => !v.split(/[\\/]/).includes('..'), 'must not contain a `..` segment');

/** GET /v1/servers filters (every one given must match); the admin list adds accountId. */
export const ServerListQuery = ListQuery.extend({
  // Parsed with the filter (shared/label-selector.ts): a bad one is 400 on query.label_selector.
  label_selector: z
    .string()
    .min(1)
    .max(2048)
    .optional()
    .meta({ description: 'Comma-joined terms, all must hold: `k=v`, `k!=v`, `k`, `!k`.' }),
  status: ServerStatus.optional(),
  region: QueryText.optional(),
  instanceId: Uuid.optional(),
  name_prefix: QueryText.optional(),
});

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
    environment: EggVariables.optional().meta({
      description: 'Egg variable name to value; omitted variables take the egg default. Only editable variables may be set.',
    }),
    dockerImage: z
      .string()
      .trim()
      .min(1)
      .max(191)
      .optional()
      .meta({ description: "One of the egg's docker images; the egg default when omitted." }),
    labels: Labels.optional(),
    addons: Addons.optional().meta({
      description: 'Extra backup slots, databases and ports, priced per hour and added to the hourly price; none when omitted.',
    }),
    subdomain: SubdomainName.optional().meta({
      description: "A name under the platform's DNS zone (`<subdomain>.<zone>`), pointing at the server's address; 409 when taken.",
    }),
    planId: Uuid.optional().meta({
      description:
        "A plan (GET /v1/plans): the resources must be its own, the egg one it allows, the add-ons at least its (else 422). Charged the plan's price.",
    }),
  })
  .strict()
  .meta({ id: 'CreateServer' });

const RESIZE = ['ramMb', 'cpuPercent', 'diskMb'] as const;

/** PATCH /v1/servers/{id}: a rename, a resize (its three fields together, as the spec has them), or both. */
export const UpdateServer = z
  .object({
    name: ServerName.optional(),
    ramMb: RamMb.optional(),
    cpuPercent: CpuPercent.optional(),
    diskMb: DiskMb.optional(),
    labels: Labels.optional().meta({ description: 'Replaces all labels.' }),
  })
  .strict()
  .superRefine((v, ctx) => {
    const given = RESIZE.filter((k) => v[k] !== undefined);
    if (given.length === 0 && v.name === undefined && v.labels === undefined)
      ctx.addIssue({ code: 'custom', message: 'give name, labels, or ramMb, cpuPercent and diskMb' });
    if (given.length > 0 && given.length < RESIZE.length) {
      for (const k of RESIZE.filter((f) => v[f] === undefined))
        ctx.addIssue({ code: 'custom', path: [k], message: 'is required with the other resize fields (ramMb, cpuPercent, diskMb)' });
    }
  })
  .meta({
    id: 'UpdateServer',
    description: '`name` renames; ramMb, cpuPercent and diskMb (all three) resize; `labels` replaces the labels; at least one of them.',
    // The rule above, in the document: the three resize fields come together, and the body is never empty.
    minProperties: 1,
    dependentRequired: { ramMb: ['cpuPercent', 'diskMb'], cpuPercent: ['ramMb', 'diskMb'], diskMb: ['ramMb', 'cpuPercent'] },
  });

export const DeletedServer = z.object({ id: Uuid, status: z.literal('deleted'), deletedAt: Timestamp }).meta({ id: 'DeletedServer' });

export const ReinstallResult = z
  .object({
    id: Uuid,
    installStatus: z.literal('installing'),
    watchedUntil: Timestamp.meta({ description: 'The install watch gives up here (server.install_failed, reason timeout).' }),
  })
  .meta({ id: 'ReinstallResult' });

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

/**
 * The panel's own stats object (its Client API `GET /servers/{id}/resources`, `attributes`), carried as
 * the specification names it: `attributes.current_state` and the counters under `attributes.resources`.
 * These field names are the panel's snake_case, not our camelCase: the specification's shape wins here.
 */
export const PanelStatsAttributes = z
  .object({
    current_state: PowerState.meta({ description: "The power state Wings reports (the specification's `attributes.current_state`)." }),
    is_suspended: z.boolean(),
    resources: z
      .object({
        memory_bytes: z.number(),
        cpu_absolute: z.number().meta({ description: 'Percent, 100 = one core.' }),
        disk_bytes: z.number(),
        network_rx_bytes: z.number(),
        network_tx_bytes: z.number(),
        uptime: z.number().meta({ description: 'Milliseconds since the container started.' }),
      })
      .meta({ description: 'The same counters as `resources`, named as the panel names them.' }),
  })
  .meta({ id: 'PanelStatsAttributes' });

export const LiveUsage = z
  .object({
    powerState: PowerState,
    suspendedOnPanel: z.boolean(),
    resources: LiveResources,
    asOf: Timestamp.meta({
      description:
        'When the panel gave these counters. They come from the live-state copy every caller shares (as in GET /v1/servers/{id}), refreshed at most every 20 s (5 s while starting or stopping); the last known ones are shown, with their time, while the panel cannot be asked.',
    }),
    attributes: PanelStatsAttributes,
  })
  .meta({
    id: 'LiveUsage',
    description:
      "The panel's counters from the shared live-state copy, twice: `attributes` as the panel's Client API shapes them (`attributes.current_state`, `attributes.resources.memory_bytes`, …; the specification's fields), and beside them the same values named as in `GET /v1/servers/{id}`'s `live` (`powerState`, `resources.memoryBytes`, …).",
  });

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
        "The instance's `wingsOrigin`, else the panel URL: a non-browser client must send it as the Origin header, or Wings refuses the upgrade with 403. A browser sends the page's own origin, so the operator must add the dashboard's origin to every node's Wings `allowed_origins` (config.yml).",
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

/* File operations beyond list/read/write/delete (shared/servers/files.ts). */
const FileRoot = FilePath.optional().meta({ description: 'Default /.' });

export const CreateFolder = z.object({ root: FileRoot, name: FilePath }).strict().meta({ id: 'CreateFolder' });
export const FolderResult = z.object({ root: text(4096), created: text(4096) }).meta({ id: 'FolderResult' });

const RenamePair = z.object({ from: FilePath, to: FilePath }).strict();
export const RenameFiles = z
  .object({
    root: FileRoot,
    files: z.array(RenamePair).min(1).max(100),
  })
  .strict()
  .meta({ id: 'RenameFiles' });
export const RenameResult = z
  .object({ root: text(4096), renamed: z.array(z.object({ from: text(4096), to: text(4096) })).max(100) })
  .meta({ id: 'RenameResult' });

export const UploadLink = z
  .object({
    directory: text(4096),
    url: z.url().max(8192).meta({ description: 'POST multipart `files` here; single use, 15 minutes.' }),
    expiresAt: Timestamp,
  })
  .meta({ id: 'UploadLink' });

export const CompressFiles = z
  .object({ root: FileRoot, files: z.array(FilePath).min(1).max(100) })
  .strict()
  .meta({ id: 'CompressFiles' });

export const DecompressFile = z.object({ root: FileRoot, file: FilePath }).strict().meta({ id: 'DecompressFile' });
export const DecompressResult = z
  .object({ root: text(4096), file: text(4096), decompressed: z.literal(true) })
  .meta({ id: 'DecompressResult' });

/* Permissions (chmod): the panel's ChmodFilesRequest (root, files[].file, files[].mode numeric); Wings reads the mode as octal. */
const FileMode = z
  .string()
  .max(4)
  .regex(/^[0-7]{3,4}$/, 'must be an octal mode of 3 or 4 digits, such as 644 or 0755')
  .meta({ description: 'Octal, as chmod takes it: 644, 755, 0600.', example: '644' });
export const ChmodFiles = z
  .object({
    root: FileRoot,
    files: z
      .array(z.object({ file: FilePath, mode: FileMode }).strict())
      .min(1)
      .max(100),
  })
  .strict()
  .meta({ id: 'ChmodFiles' });
export const ChmodResult = z
  .object({ root: text(4096), changed: z.array(z.object({ file: text(4096), mode: text(4) })).max(100) })
  .meta({ id: 'ChmodResult' });
