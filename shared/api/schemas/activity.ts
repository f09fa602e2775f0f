import * as z from 'zod';
import { int32, ListQuery, Timestamp, text } from './common.ts';

/** A server's activity: our entries about it and the panel's events for it, merged (server-history group). */

/** A detail value, flattened and bounded: lists keep their first 20 items. */
const DetailValue = z.union([text(256), z.number(), z.boolean(), z.null(), z.array(text(256)).max(20)]);

export const ServerActivityEntry = z
  .object({
    id: text(128).meta({ description: "Our entry id; a panel event: `panel:` and the panel's id for it." }),
    at: Timestamp.meta({ description: 'When it happened. The panel stamps its events to the second.' }),
    source: z.enum(['api', 'panel']).meta({
      description: '`api`: a call to this API (or the platform itself: billing, reconciler); `panel`: an event the panel logged.',
    }),
    action: text(64).meta({
      description: "Our action (`servers.power`) or the panel's event name (`server:power.start`).",
      example: 'servers.power',
    }),
    summary: text(300).meta({ description: 'What happened, in words.', example: 'Sent the power signal start' }),
    actor: z.object({
      kind: z.enum(['account', 'system', 'panel_user', 'platform', 'panel']).meta({
        description:
          '`account`: a person with an account here (`email`); `system`: this platform on its own (`name`: billing, reconciler, stripe); `panel_user`: a panel user (SFTP; `name` is the panel username); `platform`: this platform acting on the panel through its API key, with no entry of ours to show for it; `panel`: the panel or Wings with no user (a schedule).',
      }),
      name: text(254).nullable(),
      email: text(254).nullable(),
    }),
    credential: z.object({
      kind: z.enum(['api_key', 'session', 'system', 'panel_api_key', 'panel_session', 'sftp', 'none']),
      id: text(128)
        .nullable()
        .meta({ description: 'The API key id (`api_key`), the session token id (`session`); null for panel events.' }),
      name: text(128).nullable().meta({ description: 'The API key name, when it can be read.' }),
    }),
    result: z.enum(['success', 'failure']).meta({ description: 'The panel logs an event only once it succeeded.' }),
    status: int32(100, 599).nullable().meta({ description: 'HTTP status our call ended with; null for panel events.' }),
    sourceIp: text(45).nullable().meta({ description: "The caller's address; the panel shows it only for its own user's events." }),
    details: z
      .record(text(64), DetailValue)
      .meta({ description: "What the entry names (files, signal, backup); never a secret or a command's text." }),
  })
  .meta({ id: 'ServerActivityEntry' });

export const ServerActivityPanelState = z
  .object({
    status: z.enum(['ok', 'unavailable', 'not_read']).meta({
      description:
        "`ok`: the panel's events are merged in; `unavailable`: the panel did not answer (or refused), this page holds our entries only and the panel's come on later pages, late but not lost; `not_read`: the server cannot be read on the panel (not deployed, suspended, deleted, no client key).",
    }),
    code: text(64).nullable().meta({
      description: 'Why not `ok`: an error code (`panel_timeout`, `panel_unavailable`, `panel_error`, `conflict`, `no_client_key`).',
    }),
    message: text(300).nullable(),
  })
  .meta({ id: 'ServerActivityPanelState' });

export const ServerActivityList = z
  .object({
    data: z.array(ServerActivityEntry).max(100),
    nextCursor: text(4096).nullable().meta({ description: 'Pass as `cursor` for the next page; null on the last page.' }),
    panel: ServerActivityPanelState,
  })
  .meta({ id: 'ServerActivityList' });

export const ServerActivityQuery = ListQuery;
