import { randomUUID } from 'node:crypto';
import type { EventType } from '../../shared/api/event-types.ts';
import type { EventData } from '../../shared/api/schemas/events.ts';

/**
 * A valid `data` of each event type, for tests that write events with the events' own writer
 * (shared/webhooks/events.ts) rather than provoke each one: the compiler holds these to the
 * schemas the API answers with, and tests/unit/typed-events.test.ts parses each.
 */
const AT = '2026-01-01T00:00:00.000Z';

type ServerData = EventData<'server.created'>;

export function sampleServer(overrides: { [K in keyof ServerData]?: ServerData[K] } = {}): ServerData {
  const server: ServerData = {
    id: randomUUID(),
    instanceId: randomUUID(),
    identifier: '1a7ce997',
    uuid: randomUUID(),
    name: 'sample',
    eggId: 1,
    region: 'eu-central',
    address: { host: 'node1.example.net', ip: '10.0.0.1', alias: null, port: 25565 },
    ports: [],
    resources: { ramMb: 1024, cpuPercent: 100, diskMb: 2048 },
    priceCentsPerHour: 1,
    priceMillicentsPerHour: 600,
    status: 'active',
    createdAt: AT,
    updatedAt: AT,
    suspendedAt: null,
    suspendedReason: null,
    deletedAt: null,
    labels: { team: 'blue' },
    sftp: { host: 'node1.example.net', port: 2022, username: 'cp0123456789abcdef.1a7ce997', enabled: false },
  };
  return Object.assign(server, overrides);
}

const invoice = (status: EventData<'invoice.paid'>['status']): EventData<'invoice.paid'> => ({
  id: randomUUID(),
  number: 'INV-2026-000001',
  status,
  currency: 'usd',
  amountCents: 1000,
  bonusPercent: 0,
  lineItems: [{ type: 'topup', description: 'Credit top-up', amountCents: 1000, chargedCents: 1000, creditedCents: 1000 }],
  tax: {
    treatment: 'none',
    reverseCharge: false,
    country: null,
    rateBasisPoints: 0,
    label: 'Tax',
    reason: null,
    netCents: 1000,
    taxCents: 0,
    grossCents: 1000,
  },
  totalCents: 1000,
  paidCents: 1000,
  credits: [{ type: 'topup', description: 'Credit top-up', amountCents: 1000 }],
  creditedCents: 1000,
  createdAt: AT,
  paidAt: AT,
  issuedAt: AT,
  voidedAt: null,
  refundedCents: 0,
  disputedCents: 0,
  bonusReversedCents: 0,
  payment: { provider: 'sandbox', sessionId: null, paymentIntentId: null },
  creditNotes: [],
});

export const EVENT_SAMPLES: { [T in EventType]: () => EventData<T> } = {
  'server.created': () => sampleServer(),
  'server.resized': () => ({ ...sampleServer(), previousResources: { ramMb: 512, cpuPercent: 50, diskMb: 1024 } }),
  'server.suspended': () => ({ ...sampleServer({ status: 'suspended', suspendedAt: AT, suspendedReason: 'balance' }), reason: 'balance' }),
  'server.unsuspended': () => sampleServer(),
  'server.deleted': () => sampleServer({ status: 'deleted', deletedAt: AT }),
  'server.installed': () => ({ ...sampleServer(), install: { kind: 'deploy', startedAt: AT, endedAt: AT } }),
  'server.reinstalled': () => ({ ...sampleServer(), install: { kind: 'reinstall', startedAt: AT, endedAt: AT } }),
  'server.install_failed': () => ({ ...sampleServer(), install: { kind: 'deploy', startedAt: AT, endedAt: AT, reason: 'timeout' } }),
  'balance.low': () => ({ balanceCents: 499, thresholdCents: 500 }),
  'invoice.paid': () => invoice('paid'),
  'invoice.void': () => ({ ...invoice('void'), paidAt: null, voidedAt: AT, reason: 'checkout expired' }),
  'invoice.refunded': () => ({ ...invoice('refunded'), refundedCents: 1000 }),
  'invoice.disputed': () => ({ ...invoice('disputed'), disputedCents: 1000 }),
  'credit_note.issued': () => ({
    id: randomUUID(),
    number: 'CN-2026-000001',
    type: 'credit_note',
    reason: 'refund',
    invoice: { id: randomUUID(), number: 'INV-2026-000001' },
    reverses: null,
    currency: 'usd',
    lineItems: [
      {
        type: 'topup',
        description: 'Credit top-up (INV-2026-000001) taken back',
        amountCents: 1000,
        returnedCents: 1000,
        debitedCents: 1000,
      },
    ],
    netCents: 1000,
    taxCents: 0,
    totalCents: 1000,
    debitedCents: 1000,
    issuedAt: AT,
  }),
  'ledger.entry': () => ({
    seq: 1,
    type: 'grant',
    amountCents: 500,
    balanceAfterCents: 500,
    granted: true,
    reference: {
      serverId: null,
      invoiceId: null,
      invoiceNumber: null,
      hour: null,
      note: 'sample',
      lines: [],
      accruedBeforeMillicents: null,
      accruedAfterMillicents: null,
      settlesDebtCents: null,
    },
    at: AT,
  }),
  'account.debt': () => ({
    debtCents: 1500,
    previousDebtCents: 0,
    balanceCents: -1500,
    cause: 'refund',
    entrySeq: 7,
    invoiceId: randomUUID(),
    invoiceNumber: 'INV-2026-000001',
  }),
  'account.debt_settled': () => ({
    settledCents: 1500,
    balanceCents: 500,
    cause: 'topup',
    entrySeq: 8,
    invoiceId: randomUUID(),
    invoiceNumber: 'INV-2026-000002',
  }),
  'balance.runway_warning': () => ({
    horizonHours: 24,
    hoursLeft: 23.5,
    suspendAt: AT,
    balanceCents: 60,
    burnMillicentsPerHour: 2400,
    graceMinutes: 120,
  }),
  'auto_topup.failed': () => ({
    invoiceId: randomUUID(),
    invoiceNumber: 'INV-2026-000002',
    amountCents: 1000,
    code: 'card_declined',
    consecutiveFailures: 3,
    ruleDisabled: true,
    paymentUrl: null,
  }),
  'auto_topup.disabled': () => ({
    reason: 'failures',
    consecutiveFailures: 3,
    lastFailure: { at: AT, code: 'card_declined', invoiceId: randomUUID() },
  }),
  'webhook_endpoint.disabled': () => ({
    id: randomUUID(),
    url: 'https://hooks.example.net/x',
    disabledReason: 'failing',
    failingSince: AT,
  }),
  'api_key.created': () => ({
    id: randomUUID(),
    name: 'deploy bot',
    prefix: 'cp_live_ab12',
    last4: 'wxyz',
    scopes: ['servers:read'],
    createdAt: AT,
    expiresAt: null,
    lastUsedAt: null,
    revokedAt: null,
    status: 'active',
    labels: {},
  }),
  'account.sftp_password_set': () => ({ serverIds: [randomUUID()] }),
};
