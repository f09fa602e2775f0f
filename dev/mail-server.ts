import { randomUUID } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import type { Preroute } from './local-api.ts';

/**
 * The local stack's mail server (docs/local-stack.md "Mail"): a real SMTP server (smtp-server) on
 * the loopback that keeps every message it is given as an .eml file in `dir` (the data folder's
 * `mail/`), exactly the bytes SES would have been handed. `mailPage` lists and shows them at
 * GET /dev/mail. The mail sender (shared/mail/transport.ts) reaches it through `SMTP_URL`.
 */
export interface LocalMailServer {
  /** `smtp://127.0.0.1:<port>`. */
  url: string;
  port: number;
  dir: string;
  close(): Promise<void>;
}

/** Recipients at this domain are refused with 550 (`.invalid` is reserved: no real address has it). */
export const REFUSED_DOMAIN = 'refused.invalid';

/** The largest message kept (a receipt with its PDF is well under 1 MB). */
const MAX_BYTES = 10 * 1024 * 1024;

export async function startMailServer(options: { dir: string; port?: number; host?: string }): Promise<LocalMailServer> {
  mkdirSync(options.dir, { recursive: true });
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    size: MAX_BYTES,
    banner: 'control-plane local mail',
    logger: false,
    onRcptTo(address, _session, callback) {
      if (address.address.toLowerCase().endsWith(`@${REFUSED_DOMAIN}`)) {
        return callback(Object.assign(new Error('mailbox unavailable'), { responseCode: 550 }));
      }
      callback();
    },
    onData(stream, _session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        if ((stream as { sizeExceeded?: boolean }).sizeExceeded) return callback(new Error('message too large'));
        // Named by arrival, so the folder lists in order; the random part keeps two in one millisecond apart.
        const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}.eml`;
        writeFileSync(join(options.dir, name), Buffer.concat(chunks));
        callback();
      });
    },
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://${host}:${port}`,
    port,
    dir: options.dir,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The .eml files of the folder, newest first. */
export function storedMessages(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith('.eml'))
      .sort()
      .reverse();
  } catch {
    return [];
  }
}

const esc = (value: string): string =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const page = (title: string, body: string): string =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>` +
  '<style>body{font-family:system-ui,sans-serif;margin:24px;color:#1f2933}table{border-collapse:collapse}td,th{padding:4px 12px;border-bottom:1px solid #ddd;text-align:left}pre{white-space:pre-wrap;background:#f5f7fa;padding:12px}iframe{width:100%;height:600px;border:1px solid #ccc}</style>' +
  `</head><body>${body}</body></html>`;

/**
 * GET /dev/mail: the messages, newest first (time, recipient, subject); GET /dev/mail/<file>: one
 * message's headers, text part, HTML part and attachments. The HTML is shown in a sandboxed iframe
 * (`srcdoc`, no scripts, no same origin) under a CSP that loads nothing, so a message cannot run
 * anything in the local stack's origin.
 */
export function mailPage(dir: string): Preroute {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://local');
    if (req.method !== 'GET' || (url.pathname !== '/dev/mail' && !url.pathname.startsWith('/dev/mail/'))) return false;
    const send = (status: number, html: string) => {
      res.writeHead(status, {
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; frame-src 'self'; img-src data:",
        'x-content-type-options': 'nosniff',
        'cache-control': 'no-store',
      });
      res.end(html);
    };
    void (async () => {
      try {
        if (url.pathname === '/dev/mail' || url.pathname === '/dev/mail/') {
          const rows: string[] = [];
          for (const file of storedMessages(dir).slice(0, 200)) {
            const mail = await simpleParser(readFileSync(join(dir, file)));
            const time = (mail.date ?? statSync(join(dir, file)).mtime).toISOString();
            rows.push(
              `<tr><td>${esc(time)}</td><td>${esc(
                mail.to
                  ? [mail.to]
                      .flat()
                      .map((t) => t.text)
                      .join(', ')
                  : '',
              )}</td>` + `<td><a href="/dev/mail/${encodeURIComponent(file)}">${esc(mail.subject ?? '(no subject)')}</a></td></tr>`,
            );
          }
          send(
            200,
            page(
              'Local mail',
              `<h1>Local mail</h1><p>Every message the local stack sent, newest first (${esc(dir)}).</p>` +
                (rows.length ? `<table><tr><th>Time</th><th>To</th><th>Subject</th></tr>${rows.join('')}</table>` : '<p>No mail yet.</p>'),
            ),
          );
          return;
        }
        const file = decodeURIComponent(url.pathname.slice('/dev/mail/'.length));
        if (!/^[\w.-]+\.eml$/.test(file) || !storedMessages(dir).includes(file))
          return send(404, page('Not found', '<p>No such message.</p>'));
        const mail = await simpleParser(readFileSync(join(dir, file)));
        const to = mail.to
          ? [mail.to]
              .flat()
              .map((t) => t.text)
              .join(', ')
          : '';
        const attachments = mail.attachments.map(
          (a) => `<li>${esc(a.filename ?? 'attachment')} (${esc(a.contentType)}, ${a.size} bytes)</li>`,
        );
        send(
          200,
          page(
            mail.subject ?? 'Message',
            `<p><a href="/dev/mail">All mail</a></p><h1>${esc(mail.subject ?? '(no subject)')}</h1>` +
              `<p>From ${esc(mail.from?.text ?? '')}<br>To ${esc(to)}<br>${esc((mail.date ?? new Date(0)).toISOString())}</p>` +
              (attachments.length ? `<h2>Attachments</h2><ul>${attachments.join('')}</ul>` : '') +
              `<h2>Text</h2><pre>${esc(mail.text ?? '')}</pre>` +
              (mail.html ? `<h2>HTML</h2><iframe sandbox="" title="HTML part" srcdoc="${esc(mail.html)}"></iframe>` : ''),
          ),
        );
      } catch {
        send(500, page('Error', '<p>The message could not be read.</p>'));
      }
    })();
    return true;
  };
}
