import { createHmac, timingSafeEqual } from 'node:crypto';
import { getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';

/**
 * Opaque, signed pagination cursors. A cursor carries the DynamoDB position and the identity of
 * the query it belongs to (caller + listing); a cursor from another caller or listing, or one
 * that was tampered with, is refused with 400 `invalid_cursor` before any read.
 */
type Position = Record<string, unknown>;

const sign = (payload: string): string => createHmac('sha256', getConfig().cursorSecret).update(payload).digest('base64url');

export function encodeCursor(position: Position, boundTo: string): string {
  const payload = Buffer.from(JSON.stringify({ p: position, b: boundTo })).toString('base64url');
  return `${payload}.${sign(payload)}`;
}

export function decodeCursor(cursor: string | undefined, boundTo: string): Position | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  const invalid = new ApiError('invalid_cursor', 'The cursor is not valid for this listing', { field: 'cursor' });
  const [payload, signature] = cursor.split('.');
  if (!payload || !signature) throw invalid;
  const expected = Buffer.from(sign(payload));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid;
  try {
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { p?: Position; b?: string };
    if (decoded.b !== boundTo || typeof decoded.p !== 'object' || decoded.p === null) throw invalid;
    return decoded.p;
  } catch {
    throw invalid;
  }
}
