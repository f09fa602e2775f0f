import { afterEach, describe, expect, it } from 'vitest';
import { resetConfig } from '../../shared/config/env.ts';
import { deliveryIdOf, nextAttemptAfter, RETRY_WINDOW_MS } from '../../shared/webhooks/dispatch.ts';
import { checkDeliveryTarget, checkTargetUrl, refusedAddress, TargetRefusedError } from '../../shared/webhooks/targets.ts';
import { isTimeOrderedId, newId, timeOfId } from '../../shared/ids.ts';
import { inAwsStage } from '../helpers/aws-stage.ts';

/** Which addresses a webhook may be delivered to in AWS (shared/webhooks/targets.ts), and the retry schedule's arithmetic. */
describe('the address classifier', () => {
  it.each([
    ['10.0.0.1', 'private address'],
    ['10.255.255.255', 'private address'],
    ['172.16.0.1', 'private address'],
    ['172.31.255.254', 'private address'],
    ['192.168.1.10', 'private address'],
    ['127.0.0.1', 'loopback address'],
    ['127.53.0.9', 'loopback address'],
    ['169.254.169.254', 'link-local address'],
    ['169.254.0.1', 'link-local address'],
    ['100.64.0.1', 'shared (CGNAT) address'],
    ['100.127.255.255', 'shared (CGNAT) address'],
    ['0.0.0.0', 'unspecified address'],
    ['0.1.2.3', 'unspecified address'],
    ['224.0.0.251', 'multicast address'],
    ['239.255.255.250', 'multicast address'],
    ['255.255.255.255', 'broadcast address'],
    ['240.0.0.1', 'reserved address'],
    ['192.0.2.1', 'documentation address'],
    ['198.18.0.1', 'benchmarking address'],
    ['::1', 'loopback address'],
    ['::', 'unspecified address'],
    ['fe80::1', 'link-local address'],
    ['fe80::1%eth0', 'link-local address'],
    ['febf:ffff::1', 'link-local address'],
    ['fc00::1', 'unique-local address'],
    ['fd12:3456:789a::1', 'unique-local address'],
    ['ff02::1', 'multicast address'],
    ['2001:db8::1', 'documentation address'],
    ['::ffff:127.0.0.1', 'loopback address'],
    ['::ffff:7f00:1', 'loopback address'],
    ['::ffff:169.254.169.254', 'link-local address'],
    ['::ffff:10.1.2.3', 'private address'],
    ['64:ff9b::a9fe:a9fe', 'link-local address'],
    ['2002:c0a8:0101::1', 'private address'],
    ['::127.0.0.1', 'loopback address'],
    ['[::1]', 'loopback address'],
    ['example.com', 'not an IP address'],
  ])('refuses %s (%s)', (address, reason) => {
    expect(refusedAddress(address)).toBe(reason);
  });

  it.each([
    '1.1.1.1',
    '8.8.8.8',
    '93.184.215.14',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '11.0.0.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2a00:1450:4001:82b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:0808:0808::1',
    'fbff::1',
    '2001:4860::8888',
  ])('accepts %s', (address) => {
    expect(refusedAddress(address)).toBeNull();
  });
});

describe('target URLs by stage', () => {
  afterEach(() => resetConfig());

  it('in AWS: https only, and no literal non-public address, already when the endpoint is made', async () => {
    await inAwsStage(() => {
      expect(checkTargetUrl('https://hooks.example.com/x').hostname).toBe('hooks.example.com');
      expect(() => checkTargetUrl('http://hooks.example.com/x')).toThrow(/must use https/);
      expect(() => checkTargetUrl('https://10.0.0.5/x')).toThrow(/private address/);
      expect(() => checkTargetUrl('https://[::1]/x')).toThrow(/loopback address/);
      expect(() => checkTargetUrl('https://169.254.169.254/latest/meta-data')).toThrow(/link-local address/);
      expect(() => checkTargetUrl('https://localhost/x')).toThrow(/loopback address/);
      expect(checkDeliveryTarget('https://hooks.example.com/x').guarded).toBe(true);
      expect(() => checkDeliveryTarget('https://127.0.0.1:8443/')).toThrow(new TargetRefusedError('loopback address'));
      expect(() => checkDeliveryTarget('http://hooks.example.com/')).toThrow(new TargetRefusedError('must use https'));
    });
  });

  it('locally: http on loopback too, and no address check at delivery', () => {
    expect(checkTargetUrl('http://127.0.0.1:4000/hook').port).toBe('4000');
    expect(checkTargetUrl('http://localhost:4000/hook').port).toBe('4000');
    expect(() => checkTargetUrl('http://hooks.example.com/')).toThrow(/https/);
    expect(checkDeliveryTarget('http://127.0.0.1:4000/hook').guarded).toBe(false);
  });
});

describe('delivery ids and the schedule', () => {
  it('derives a delivery id from (event, endpoint): stable, time-ordered by the event, distinct per endpoint', () => {
    const eventId = newId();
    const a = deliveryIdOf(eventId, 'endpoint-a');
    expect(deliveryIdOf(eventId, 'endpoint-a')).toBe(a);
    expect(deliveryIdOf(eventId, 'endpoint-b')).not.toBe(a);
    expect(isTimeOrderedId(a)).toBe(true);
    expect(timeOfId(a)).toBe(timeOfId(eventId));
  });

  it('waits 5 s, 5 min, 30 min, 2 h, 5 h, then 10 h, and ends with one attempt at 3 days', () => {
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const attempts = [{ at: new Date(t0).toISOString(), status: 500, durationMs: 1, error: 'http_500', responseExcerpt: null }];
    let now = t0;
    const offsets: number[] = [];
    for (let failed = 1; failed < 30; failed++) {
      const next = nextAttemptAfter(attempts, new Date(now), failed);
      if (!next) break;
      now = next.getTime();
      offsets.push((now - t0) / 1000);
    }
    const h = 3600;
    expect(offsets).toEqual([
      5,
      5 + 300,
      5 + 300 + 1800,
      5 + 300 + 1800 + 2 * h,
      5 + 300 + 1800 + 7 * h,
      5 + 300 + 1800 + 17 * h,
      5 + 300 + 1800 + 27 * h,
      5 + 300 + 1800 + 37 * h,
      5 + 300 + 1800 + 47 * h,
      5 + 300 + 1800 + 57 * h,
      5 + 300 + 1800 + 67 * h,
      RETRY_WINDOW_MS / 1000,
    ]);
  });
});
