import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SQSEvent } from 'aws-lambda';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { setAttributes } from '../helpers/db.ts';
import { keys } from '../../shared/db/keys.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';
import { readWatermark } from '../../shared/billing/pass.ts';

/**
 * The billing pass in its AWS shape: the scheduler sends one message per shard with the real SQS
 * client (to a local stand-in of SQS's JSON API via AWS_ENDPOINT_URL_SQS), and the worker charges
 * the shards from those very messages; the last shard moves the watermark.
 */
const sent: { Id: string; MessageBody: string }[] = [];
let sqs: Server;
let api: TestApi;
let handler: typeof import('../../functions/billing-pass/handler.ts');

beforeAll(async () => {
  sqs = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const target = String(req.headers['x-amz-target'] ?? '');
    const body = JSON.parse(raw || '{}') as { Entries?: { Id: string; MessageBody: string }[] };
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
    if (target.endsWith('SendMessageBatch')) {
      sent.push(...(body.Entries ?? []));
      res.end(
        JSON.stringify({
          Successful: (body.Entries ?? []).map((e) => ({
            Id: e.Id,
            MessageId: `m-${e.Id}`,
            MD5OfMessageBody: createHash('md5').update(e.MessageBody).digest('hex'),
          })),
          Failed: [],
        }),
      );
    } else res.end('{}');
  });
  await new Promise<void>((r) => sqs.listen(0, '127.0.0.1', () => r()));
  const { port } = sqs.address() as { port: number };
  Object.assign(process.env, {
    BILLING_QUEUE_URL: `http://127.0.0.1:${port}/123456789012/billing-work`,
    AWS_ENDPOINT_URL_SQS: `http://127.0.0.1:${port}`,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_REGION: 'us-east-1',
  });
  api = await startTestApi({ panel: { installMs: 20, transitionMs: 10, resourcesCacheMs: 0 } });
  // Imported after the environment is set: the module creates its SQS client at load, as in Lambda.
  handler = await import('../../functions/billing-pass/handler.ts');
});
afterAll(async () => {
  await api?.stop();
  await new Promise<void>((r) => sqs.close(() => r()));
});

describe('billing through the queue', () => {
  it('the scheduler queues 16 shards; workers charge them from those messages and move the watermark', async () => {
    const token = await api.session('queued@example.com');
    const { id } = (await api.call('GET', '/v1/account', { token })).body;
    const server = (
      await api.call('POST', '/v1/servers', { token, body: { name: 'queued', eggId: 1, ramMb: 1024, cpuPercent: 100, diskMb: 2048 } })
    ).body;
    const created = hourStart(Date.now()) - 3 * HOUR_MS + 10 * 60_000;
    await setAttributes(keys.server(id, server.id), {
      createdAt: new Date(created).toISOString(),
      history: [{ at: new Date(created).toISOString(), status: 'active', priceCentsPerHour: 1 }],
    });

    const at = new Date(hourStart(Date.now()) - HOUR_MS + 5 * 60_000);
    const queued = (await handler.scheduler({ time: at.toISOString() })) as { queued: number; throughHour: string };
    expect(queued.queued).toBe(16);
    expect(sent.map((m) => Number(JSON.parse(m.MessageBody).shard)).sort((a, b) => a - b)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(await readWatermark()).toBeNull(); // nothing charged yet: only queued

    const result = await handler.worker({
      Records: sent.map((m) => ({ messageId: `m-${m.Id}`, body: m.MessageBody })),
    } as unknown as SQSEvent);
    expect(result.batchItemFailures).toEqual([]);
    expect(await readWatermark()).toBe(Date.parse(queued.throughHour));
    const charges = (await api.call('GET', '/v1/account/transactions', { token })).body.data.filter(
      (e: { type: string }) => e.type === 'charge',
    );
    expect(charges.map((c: { reference: { hour: string } }) => c.reference.hour)).toEqual([
      new Date(hourStart(Date.now()) - 2 * HOUR_MS).toISOString(),
      new Date(hourStart(Date.now()) - 3 * HOUR_MS).toISOString(),
    ]);
  });

  it('the every-minute entry runs the pending repairs, then the auto top-ups and the install watch (loaded on use)', async () => {
    const summary = await handler.minutePasses();
    // A failed auto top-up pass is reported as null beside the repairs' summary; here it ran.
    expect(summary.autoTopUps).toEqual({ due: 0, attempted: 0, skipped: 0, failed: 0 });
    // The server deployed above has installed: one listing call, one server.installed.
    expect(summary.installWatch).toEqual({ due: 1, checked: 1, ended: 1, dropped: 0, panelCalls: 1 });
  });
});
