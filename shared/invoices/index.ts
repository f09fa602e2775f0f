import { randomUUID } from 'node:crypto';
import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { z } from 'zod';
import { db, tableName } from '../db/client.ts';
import { keys } from '../db/keys.ts';
import { accessPatterns, getItem, type Item, type Page, type PageRequest } from '../db/access-patterns.ts';
import { notFound } from '../errors.ts';
import type { Invoice } from '../api/schemas.ts';

/**
 * Invoices: every top-up is one. Numbers are `INV-<year>-<six digits>`, sequential and gapless
 * per year even under concurrent checkouts: a number is taken in the same transaction that writes
 * the invoice, under the condition that the year's counter still holds the value read (the
 * transactional-write pattern), so a number is never skipped or used twice. A failed checkout
 * voids its invoice; the number stays used, so the sequence has no gap.
 *
 * States: open → paid (the webhook, once) or open → void (expired, failed, or the payment page
 * could not be opened). Paid is final: a late `expired` never voids a paid invoice.
 */
export type InvoiceView = z.infer<typeof Invoice>;
export type Provider = 'stripe' | 'sandbox';

export const formatNumber = (year: number, n: number): string => `INV-${year}-${String(n).padStart(6, '0')}`;

export function toInvoiceView(item: Item): InvoiceView {
  return {
    id: item.invoiceId as string,
    number: item.number as string,
    status: item.status as InvoiceView['status'],
    currency: 'usd',
    amountCents: Number(item.amountCents),
    bonusPercent: Number(item.bonusPercent),
    lineItems: (item.lineItems as InvoiceView['lineItems'] | undefined) ?? [],
    totalCents: Number(item.amountCents),
    creditedCents: Number(item.creditedCents ?? 0),
    createdAt: item.createdAt as string,
    paidAt: (item.paidAt as string | undefined) ?? null,
    voidedAt: (item.voidedAt as string | undefined) ?? null,
    payment: {
      provider: item.provider as Provider,
      sessionId: (item.sessionId as string | undefined) ?? null,
      paymentIntentId: (item.paymentIntentId as string | undefined) ?? null,
    },
  };
}

/** Opens an invoice with the next number of the year. */
export async function openInvoice(
  accountId: string,
  amountCents: number,
  bonusPercent: number,
  provider: Provider,
  now = new Date(),
): Promise<InvoiceView> {
  const year = now.getUTCFullYear();
  const invoiceId = randomUUID();
  for (let attempt = 0; attempt < 60; attempt++) {
    const counter = await getItem(keys.invoiceCounter(year));
    const last = Number(counter?.last ?? 0);
    const number = formatNumber(year, last + 1);
    const item = {
      ...keys.invoice(accountId, number),
      kind: 'invoice',
      invoiceId,
      accountId,
      number,
      status: 'open',
      amountCents,
      bonusPercent,
      // The top-up line is known now; the bonus line is added when the payment arrives.
      lineItems: [{ type: 'topup', description: 'Credit top-up', amountCents }],
      provider,
      createdAt: now.toISOString(),
    };
    try {
      await db().send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Update: {
                TableName: tableName(),
                Key: keys.invoiceCounter(year),
                UpdateExpression: 'SET #last = :next',
                ConditionExpression: counter ? '#last = :last' : 'attribute_not_exists(#last)',
                ExpressionAttributeNames: { '#last': 'last' },
                ExpressionAttributeValues: { ':next': last + 1, ...(counter ? { ':last': last } : {}) },
              },
            },
            { Put: { TableName: tableName(), Item: item, ConditionExpression: 'attribute_not_exists(PK)' } },
            {
              Put: {
                TableName: tableName(),
                Item: { ...keys.invoiceNumber(number), kind: 'invoice-number', invoiceId, accountId },
                ConditionExpression: 'attribute_not_exists(PK)',
              },
            },
            {
              Put: {
                TableName: tableName(),
                Item: { ...keys.invoicePointer(invoiceId), kind: 'invoice-pointer', accountId, number },
                ConditionExpression: 'attribute_not_exists(PK)',
              },
            },
          ],
        }),
      );
      return toInvoiceView(item);
    } catch (err) {
      if ((err as Error).name !== 'TransactionCanceledException') throw err;
      // Another checkout took this number: read the counter again.
      await new Promise((r) => setTimeout(r, Math.random() * 15 * Math.min(attempt + 1, 8)));
    }
  }
  throw new Error('Could not allocate an invoice number: too much contention');
}

/** The invoice item wherever it lives (the webhook knows only the invoice id). */
export async function findInvoiceItem(invoiceId: string): Promise<Item | undefined> {
  const pointer = await getItem(keys.invoicePointer(invoiceId));
  if (!pointer) return undefined;
  return getItem(keys.invoice(pointer.accountId as string, pointer.number as string));
}

/** The caller's invoice; another account's invoice is 404 exactly like an unknown id. */
export async function getInvoice(accountId: string, invoiceId: string): Promise<InvoiceView> {
  const pointer = await getItem(keys.invoicePointer(invoiceId));
  if (!pointer || pointer.accountId !== accountId) throw notFound('Invoice');
  const item = await getItem(keys.invoice(accountId, pointer.number as string));
  if (!item) throw notFound('Invoice');
  return toInvoiceView(item);
}

export async function listInvoices(accountId: string, page: PageRequest): Promise<Page<InvoiceView>> {
  const result = await accessPatterns.invoicesOfAccount(accountId, page);
  return { data: result.data.map(toInvoiceView), nextCursor: result.nextCursor };
}

export async function attachSession(item: Item, sessionId: string): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: { PK: item.PK as string, SK: item.SK as string },
      UpdateExpression: 'SET sessionId = :s',
      ExpressionAttributeValues: { ':s': sessionId },
    }),
  );
}

/** open → void; a paid invoice is never voided. Returns whether this call voided it. */
export async function voidInvoice(item: Item, reason: string): Promise<boolean> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: { PK: item.PK as string, SK: item.SK as string },
        UpdateExpression: 'SET #status = :void, voidedAt = :now, voidReason = :reason',
        ConditionExpression: '#status = :open',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':void': 'void', ':open': 'open', ':now': new Date().toISOString(), ':reason': reason },
      }),
    );
    return true;
  } catch (err) {
    if ((err as Error).name === 'ConditionalCheckFailedException') return false;
    throw err;
  }
}
