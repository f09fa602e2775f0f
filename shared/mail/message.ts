import { loadNodemailer } from '../packages.ts';
import type { MessageType } from './templates.ts';

/**
 * One message as the sending module handles it, whatever the transport: who it is for, what it
 * says (both parts), what it carries, and the key it is sent once under.
 */
export interface MailMessage {
  type: MessageType;
  accountId: string;
  to: string;
  subject: string;
  html: string;
  text: string;
  attachments: MailAttachment[];
  /** The mail item's id: the same on every attempt, and the Message-ID's local part. */
  idempotencyKey: string;
  /** The one-click unsubscribe link (RFC 8058), on optional messages only (shared/mail/classes.ts). */
  unsubscribeUrl?: string;
}

export interface MailAttachment {
  filename: string;
  contentType: string;
  content: Uint8Array;
}

/** The sender: a display name and an address (MAIL_FROM). */
export interface MailSender {
  name: string;
  address: string;
}

/**
 * The message as standard MIME, built by nodemailer's MailComposer (through its buffering stream
 * transport, which returns the bytes and sends nothing): multipart/alternative text and HTML
 * parts, in multipart/mixed with the attachments; headers encoded as RFC 2047 asks; CRLF lines.
 */
export async function buildMime(message: MailMessage, from: MailSender): Promise<Buffer> {
  const domain = from.address.slice(from.address.lastIndexOf('@') + 1) || 'localhost';
  const { createTransport } = await loadNodemailer();
  const composer = createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  const built = await composer.sendMail({
    from: { name: from.name, address: from.address },
    to: message.to,
    subject: message.subject,
    text: message.text,
    html: message.html,
    // One id per message: a receiver that sees it twice (an attempt retried after a lost answer) can tell.
    messageId: `<${message.idempotencyKey}@${domain}>`,
    headers: {
      'X-Message-Type': message.type,
      // RFC 8058: the link alone (no mailto), and the POST that acts on it without a page in between.
      ...(message.unsubscribeUrl
        ? { 'List-Unsubscribe': `<${message.unsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' }
        : {}),
    },
    attachments: message.attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: Buffer.from(a.content) })),
  });
  return built.message as Buffer;
}
