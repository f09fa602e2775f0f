import { getConfig } from '../config/env.ts';
import { loadNodemailer, loadSesV2, type SESv2Client, type Transporter } from '../packages.ts';

/**
 * Where a built message goes, chosen by the configuration (shared/config/env.ts `mail`): SES v2
 * in AWS (SendEmail with the raw MIME, in the configuration set that reports bounces and
 * complaints), SMTP elsewhere (the local stack's server, dev/mail-server.ts). Both take the same
 * bytes, so what the local folder shows is what SES would have sent.
 */
export interface MailTransport {
  readonly kind: 'ses' | 'smtp';
  /** Hands the message over; resolves with the transport's message id, throws when it was not taken. */
  send(raw: Buffer, envelope: { from: string; to: string }): Promise<string>;
}

let cached: MailTransport | null | undefined;

/** The transport of this process's configuration, or null when mail is off. */
export function mailTransport(): MailTransport | null {
  if (cached !== undefined) return cached;
  const { mail } = getConfig();
  cached = mail.transport === 'ses' ? sesTransport(mail.configurationSet) : mail.transport === 'smtp' ? smtpTransport(mail.smtpUrl!) : null;
  return cached;
}

/** Tests and the local stack change the configuration: the next send builds its transport again. */
export function resetMailTransport(): void {
  cached = undefined;
}

function sesTransport(configurationSet: string | undefined): MailTransport {
  let client: SESv2Client | undefined;
  return {
    kind: 'ses',
    send: async (raw, envelope) => {
      const { SESv2Client, SendEmailCommand } = await loadSesV2();
      client ??= new SESv2Client({});
      const out = await client.send(
        new SendEmailCommand({
          FromEmailAddress: envelope.from,
          Destination: { ToAddresses: [envelope.to] },
          Content: { Raw: { Data: raw } },
          ...(configurationSet ? { ConfigurationSetName: configurationSet } : {}),
        }),
      );
      return out.MessageId ?? '';
    },
  };
}

function smtpTransport(url: string): MailTransport {
  const { hostname, port } = new URL(url);
  let transporter: Transporter | undefined;
  return {
    kind: 'smtp',
    send: async (raw, envelope) => {
      // The local server speaks plain SMTP on the loopback: no TLS, no authentication.
      transporter ??= (await loadNodemailer()).createTransport({
        host: hostname,
        port: Number(port),
        secure: false,
        ignoreTLS: true,
        connectionTimeout: 5_000,
      });
      const info = await transporter.sendMail({ envelope, raw });
      return info.messageId ?? '';
    },
  };
}
