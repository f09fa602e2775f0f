import * as z from 'zod';
import { EVENT_SCOPES, EVENT_TYPES } from '../event-types.ts';
import { Event } from './events.ts';
import { Uuid, INT32_MAX, text, int32, Count, Timestamp, ListQuery, SafeText, listOf, Labels } from './common.ts';

/** Outbound webhooks (account group): endpoints, deliveries, events. */

/** The event types an endpoint can subscribe to (shared/api/event-types.ts). */
export const WEBHOOK_EVENT_TYPES = EVENT_TYPES;

/** Which scope reads each type, for the document (from the one table in shared/api/event-types.ts). */
export const EVENT_SCOPE_TEXT = EVENT_TYPES.map((t) => `\`${t}\` ${EVENT_SCOPES[t]}`).join(', ');

export const EventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES).meta({ id: 'EventType' });

import { WEBHOOK_DESCRIPTION_MAX, WEBHOOK_URL_MAX } from '../webhook-limits.ts';

export { WEBHOOK_DESCRIPTION_MAX, WEBHOOK_URL_MAX };

const WebhookUrl = z.string().max(WEBHOOK_URL_MAX).meta({
  format: 'uri',
  description:
    'Where events are sent: https (in the local stack also plain http on loopback, e.g. http://127.0.0.1:4000/hook). At most 2048 characters also once normalised: non-ASCII characters count as their percent-encoding (`€` is `%E2%82%AC`, 9).',
});
const WebhookEvents = z
  .array(EventTypeSchema)
  .max(WEBHOOK_EVENT_TYPES.length)
  .refine((v) => new Set(v).size === v.length, 'must not repeat an event type');
const WebhookDescription = SafeText.trim().max(WEBHOOK_DESCRIPTION_MAX);

export const WebhookEndpoint = z
  .object({
    id: Uuid,
    url: text(WEBHOOK_URL_MAX),
    events: z
      .array(EventTypeSchema)
      .max(WEBHOOK_EVENT_TYPES.length)
      .meta({ description: 'The event types it subscribes to; empty: every type the credential that set it could read.' }),
    receivedTypes: z
      .array(EventTypeSchema)
      .max(WEBHOOK_EVENT_TYPES.length)
      .meta({
        description: `The event types sent to it: \`events\` (every type when empty) cut to those the credential that last set its url or events could read (${EVENT_SCOPE_TEXT}).`,
      }),
    description: text(WEBHOOK_DESCRIPTION_MAX).nullable(),
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
    labels: Labels,
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
    events: WebhookEvents.optional().meta({
      description: 'Omit or leave empty for every event type this credential can read. A type it cannot read is 403 `forbidden`.',
    }),
    description: WebhookDescription.optional(),
    labels: Labels.optional().meta({ description: 'Your labels on the endpoint; none when omitted.' }),
  })
  .strict()
  .meta({ id: 'CreateWebhookEndpoint' });

export const UpdateWebhookEndpoint = z
  .object({
    url: WebhookUrl.optional(),
    events: WebhookEvents.optional().meta({
      description:
        'Empty: every event type this credential can read. Changing `url` or `events` needs the scopes of every type the endpoint receives, before and after (else 403 `forbidden`).',
    }),
    enabled: z.boolean().optional().meta({ description: 'true re-enables an endpoint the service disabled (and clears why).' }),
    description: WebhookDescription.nullable().optional(),
    labels: Labels.optional().meta({ description: 'Replaces the whole label map (`{}` removes every label).' }),
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

export { Event };
export const EventList = listOf(Event, 'EventList');

export const EventsQuery = ListQuery.extend({
  type: EventTypeSchema.optional().meta({
    description: 'Only events of this type (403 `forbidden` for a type the credential cannot read).',
  }),
});

export const DeletedWebhookEndpoint = z
  .object({
    id: Uuid,
    deleted: z.literal(true),
    stoppedDeliveries: Count.meta({ description: 'Pending deliveries that will not be sent.' }),
  })
  .meta({ id: 'DeletedWebhookEndpoint' });
