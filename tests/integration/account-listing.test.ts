import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { startTestApi, type TestApi } from '../helpers/stack.ts';
import { customer, type Customer } from '../helpers/customer.ts';
import { getRaw, setAttributes } from '../helpers/db.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import type { AccountItem } from '../../shared/db/items.ts';
import { moveListingOffProfile } from '../../shared/accounts/listing.ts';
import { runPassInProcess } from '../../shared/billing/pass.ts';
import { HOUR_MS, hourStart } from '../../shared/pricing/hours.ts';

/**
 * The admin listing's rows are items of their own (`ACCOUNT#<id>`/`LISTING`), so a balance change
 * writes no GSI1 copy of the profile. Against DynamoDB Local through the API: new accounts are
 * listed by their entry with the profile's current figures; an account from before the entry (its
 * GSI1 keys on the profile, made here by hand as the old code stored it) is listed too, and the
 * billing pass moves it — never listed twice, never missing.
 */
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.stop());

/** Turns an account into one created before the listing entry: GSI1 keys on the profile, no entry. */
async function makeLegacy(c: Customer): Promise<void> {
  const profile = (await getRaw(keys.account(c.id))) as unknown as AccountItem;
  await db().send(new DeleteCommand({ TableName: tableName(), Key: keys.accountListingEntry(c.id) }));
  await setAttributes(keys.account(c.id), keys.accountsListing(c.id, profile.createdAt));
}

/** Every account the listing returns under an e-mail prefix, page by page (limit 1: the cursor across shards). */
async function listed(prefix: string, limit = 1): Promise<{ id: string; balanceCents: number }[]> {
  const out: { id: string; balanceCents: number }[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 20; pages++) {
    const qs: string = `email=${prefix}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await api.call('GET', `/v1/admin/users?${qs}`);
    expect(res.status, res.text).toBe(200);
    out.push(...res.body.data);
    cursor = res.body.nextCursor;
    if (!cursor) break;
  }
  return out;
}

describe('the accounts listing entry', () => {
  let a: Customer;
  let b: Customer;
  let old: Customer;
  beforeAll(async () => {
    a = await customer(api, 'listing-a@example.com');
    b = await customer(api, 'listing-b@example.com');
    old = await customer(api, 'listing-old@example.com');
    await makeLegacy(old);
  });

  it('a new account: the profile is on no index, its entry is listed with the profile as it is now', async () => {
    const profile = await getRaw(keys.account(a.id));
    expect(profile!.GSI1PK).toBeUndefined();
    expect(await getRaw(keys.accountListingEntry(a.id))).toMatchObject({
      kind: 'account-listing',
      email: 'listing-a@example.com',
      ...keys.accountsListing(a.id, String(profile!.createdAt)),
    });
    // A credit moves the profile only; the listing shows it (the page reads the profiles).
    const credit = await api.call('POST', `/v1/admin/users/${a.id}/credits`, { body: { amountCents: 1234, note: 'listing test' } });
    expect(credit.status, credit.text).toBe(200);
    const rows = await listed('listing-');
    expect(rows.map((r) => r.id).sort()).toEqual([a.id, b.id, old.id].sort());
    expect(rows.find((r) => r.id === a.id)!.balanceCents).toBe(Number(profile!.balanceCents) + 1234);
    expect(await listed('listing-a')).toEqual([expect.objectContaining({ id: a.id, email: 'listing-a@example.com' })]);
  });

  it('an account from before the entry is listed, and the billing pass moves it: listed once before and after', async () => {
    expect((await getRaw(keys.account(old.id)))!.GSI1PK).toBeDefined();
    expect((await listed('listing-old')).map((r) => r.id)).toEqual([old.id]);
    // A billable server, so the pass charges the account (and moves its listing keys).
    const serverId = randomUUID();
    const created = new Date(hourStart(Date.now()) - 2 * HOUR_MS + 60_000).toISOString();
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.server(old.id, serverId),
          ...keys.billable(old.id, serverId),
          kind: 'server',
          serverId,
          accountId: old.id,
          status: 'active',
          priceCentsPerHour: 1,
          priceMillicentsPerHour: 1000,
          createdAt: created,
          updatedAt: created,
          history: [{ at: created, status: 'active', priceCentsPerHour: 1, priceMillicentsPerHour: 1000 }],
        },
      }),
    );
    const summary = await runPassInProcess(new Date(hourStart(Date.now()) - HOUR_MS + 5 * 60_000));
    expect(summary.errors).toBe(0);
    expect(summary.serverHoursCharged).toBe(1);
    expect((await getRaw(keys.account(old.id)))!.GSI1PK).toBeUndefined();
    expect(await getRaw(keys.accountListingEntry(old.id))).toMatchObject({ kind: 'account-listing', email: 'listing-old@example.com' });
    const rows = await listed('listing-');
    expect(rows.map((r) => r.id).sort()).toEqual([a.id, b.id, old.id].sort());
  });

  it('two moves at once: one moves it, the other leaves it; listed once', async () => {
    const c = await customer(api, 'listing-race@example.com');
    await makeLegacy(c);
    const profile = (await getRaw(keys.account(c.id))) as unknown as AccountItem;
    const moved = await Promise.all([moveListingOffProfile(profile), moveListingOffProfile(profile)]);
    expect(moved.filter(Boolean).length).toBeLessThanOrEqual(1);
    // A conflict may leave it for the next pass; then the next move does it.
    if (!moved.some(Boolean)) expect(await moveListingOffProfile(profile)).toBe(true);
    expect(await moveListingOffProfile(profile)).toBe(false); // moved: the profile read before still says GSI1PK, the write refuses
    expect((await getRaw(keys.account(c.id)))!.GSI1PK).toBeUndefined();
    expect((await listed('listing-race')).map((r) => r.id)).toEqual([c.id]);
  });
});
