import type { MessageType } from '../mail/templates.ts';

/**
 * Which messages a customer may turn off (docs/mail.md): the one place each message type is
 * classified, so every new type must be (a type missing here does not compile). Transactional
 * mail (money documents, warnings before a server stops, security notices, the e-mail change
 * confirmation) is always sent; an optional one is sent unless the account turned it off, and
 * carries one-click unsubscribe headers (RFC 8058). Types only imported: the API schemas read
 * this module without loading the templates.
 */
export const MAIL_CLASSES = {
  receipt: 'transactional',
  'credit-note': 'transactional',
  'auto-topup-failed': 'transactional',
  'server-suspended': 'transactional',
  'server-unsuspended': 'transactional',
  'server-install-failed': 'transactional',
  // The warning before suspension, and the security notices: always sent.
  'runway-warning': 'transactional',
  'webhook-endpoint-disabled': 'transactional',
  'api-key-created': 'transactional',
  'sftp-password-set': 'transactional',
  // The e-mail change: the confirmation (to the new address) and the notices to the previous one.
  'email-confirm': 'transactional',
  'email-change-notice': 'transactional',
  'email-changed': 'transactional',
  // The account's own threshold, not the warning before suspension (that is the runway warning's).
  'low-balance': 'optional',
  // The customer started the deploy and watches it.
  'server-installed': 'optional',
} as const satisfies Record<MessageType, 'transactional' | 'optional'>;

export type OptionalMessageType = {
  [T in keyof typeof MAIL_CLASSES]: (typeof MAIL_CLASSES)[T] extends 'optional' ? T : never;
}[keyof typeof MAIL_CLASSES];

const typesOf = (cls: 'transactional' | 'optional') =>
  (Object.keys(MAIL_CLASSES) as MessageType[]).filter((t) => MAIL_CLASSES[t as keyof typeof MAIL_CLASSES] === cls);

export const TRANSACTIONAL_MESSAGE_TYPES: readonly string[] = typesOf('transactional');
export const OPTIONAL_MESSAGE_TYPES = typesOf('optional') as OptionalMessageType[];

export const isOptionalMessageType = (type: string): type is OptionalMessageType => (OPTIONAL_MESSAGE_TYPES as string[]).includes(type);
