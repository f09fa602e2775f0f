import * as accessPatterns from '../db/access-patterns.ts';
import { keys } from '../db/keys.ts';
import { writeItem } from '../db/write.ts';
import { ApiError } from '../errors.ts';
import {
  isOptionalMessageType,
  OPTIONAL_MESSAGE_TYPES,
  type OptionalMessageType,
  TRANSACTIONAL_MESSAGE_TYPES,
} from '../api/mail-classes.ts';

/**
 * The account's mail preferences (docs/mail.md): each optional message type on or off, on by
 * default; transactional types are always on and cannot be set off. Stored as the set of types
 * turned off on an item of its own, changed by atomic set additions and removals, so a one-click
 * unsubscribe and a PUT never lose each other's change.
 */
export interface MailPreferencesView {
  /** Every optional message type: true when it is sent. */
  preferences: Record<OptionalMessageType, boolean>;
  /** The types always sent, whatever the preferences. */
  transactional: string[];
}

export async function getMailPreferences(accountId: string): Promise<MailPreferencesView> {
  const off = (await accessPatterns.mailPreferences(accountId))?.off ?? new Set<string>();
  const preferences = Object.fromEntries(OPTIONAL_MESSAGE_TYPES.map((t) => [t, !off.has(t)])) as Record<OptionalMessageType, boolean>;
  return { preferences, transactional: [...TRANSACTIONAL_MESSAGE_TYPES] };
}

/** True when the account turned this message type off (a transactional type never is). */
export async function isMessageTypeOff(accountId: string, type: string): Promise<boolean> {
  if (!isOptionalMessageType(type)) return false;
  return (await accessPatterns.mailPreferences(accountId))?.off?.has(type) ?? false;
}

/**
 * Sets the types named (the others keep their value). A transactional type set off is refused
 * with 400 naming every such type, before anything changes.
 */
export async function setMailPreferences(accountId: string, update: Record<string, boolean>): Promise<MailPreferencesView> {
  const refused = Object.entries(update)
    .filter(([type, on]) => !on && TRANSACTIONAL_MESSAGE_TYPES.includes(type))
    .map(([type]) => type);
  if (refused.length)
    throw new ApiError('validation_failed', `Transactional mail cannot be turned off: ${refused.join(', ')}`, {
      issues: refused.map((type) => ({ field: `body.preferences.${type}`, message: 'transactional: always sent' })),
    });
  const entries = Object.entries(update).filter(([type]) => isOptionalMessageType(type));
  const off = entries.filter(([, on]) => !on).map(([type]) => type);
  const on = entries.filter(([, on]) => on).map(([type]) => type);
  if (off.length) await changeOff(accountId, 'ADD', off);
  if (on.length) await changeOff(accountId, 'DELETE', on);
  return getMailPreferences(accountId);
}

/** The one-click unsubscribe: this type off. */
export async function turnOff(accountId: string, type: OptionalMessageType): Promise<void> {
  await changeOff(accountId, 'ADD', [type]);
}

/** One atomic change of the set of types turned off (ADD and DELETE cannot share one update expression). */
async function changeOff(accountId: string, op: 'ADD' | 'DELETE', types: string[]): Promise<void> {
  await writeItem({
    Update: {
      Key: keys.mailPreferences(accountId),
      UpdateExpression: `SET kind = :kind, accountId = :account, updatedAt = :now ${op} #off :types`,
      ExpressionAttributeNames: { '#off': 'off' },
      ExpressionAttributeValues: {
        ':kind': 'mail-preferences',
        ':account': accountId,
        ':now': new Date().toISOString(),
        ':types': new Set(types),
      },
    },
  });
}
