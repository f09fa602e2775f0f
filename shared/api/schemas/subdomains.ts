import * as z from 'zod';
import { LABEL_PATTERN, RESERVED_NAMES } from '../../dns/names.ts';
import { int32, text } from './common.ts';

/** A server's name under the platform's DNS zone (servers group; shared/servers/subdomain.ts). */

export const SubdomainName = z
  .string()
  // No trim: JavaScript's trim also takes a BOM or a no-break space, which the document's pattern refuses.
  .toLowerCase()
  .min(1)
  .max(63)
  .regex(LABEL_PATTERN, 'must be letters, digits and hyphens, starting and ending with a letter or digit (one DNS label)')
  .refine((name) => name.slice(2, 4) !== '--', 'must not have hyphens in the 3rd and 4th positions')
  .refine((name) => !RESERVED_NAMES.has(name), 'is reserved')
  .meta({
    id: 'SubdomainName',
    description:
      'One DNS label, compared in lower case: 1–63 letters, digits and hyphens, no hyphen first or last; some names are reserved.',
  });

export const SetSubdomain = z.strictObject({ name: SubdomainName }).meta({ id: 'SetSubdomain' });

export const ServerSubdomain = z
  .object({
    name: text(63),
    fqdn: text(253).meta({ description: 'What players type: `<name>.<zone>`.' }),
    srv: z
      .object({
        name: text(253).meta({ description: 'The SRV record, e.g. `_minecraft._tcp.<fqdn>`.' }),
        port: int32(1, 65_535),
      })
      .nullable()
      .meta({
        description:
          'The SRV record for a game whose client reads one (Minecraft Java, TeamSpeak 3): then the fqdn alone reaches the port. Null: players add the port.',
      }),
    status: z.enum(['pending', 'active', 'failed']).meta({
      description:
        '`active`: the DNS provider holds the records. `pending`: being published. `failed`: the provider refused or did not answer; it is retried within minutes.',
    }),
  })
  .meta({ id: 'ServerSubdomain' });
