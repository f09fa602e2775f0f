import * as z from 'zod';
import { Email, int32, SafeText } from './common.ts';
import { HEX_COLOUR, unreadableColourReason } from '../../colour/contrast.ts';

/** The operator's brand (platform setting `brand`; shared/brand reads it for the dashboard, PDFs, Checkout and e-mail). */

/** A link customers follow: https only (the local stack's own http://127.0.0.1 and localhost aside). */
const Link = z
  .string()
  .max(2000)
  .refine((v) => {
    try {
      const u = new URL(v);
      return !u.username && !u.password && (u.protocol === 'https:' || ['127.0.0.1', 'localhost'].includes(u.hostname));
    } catch {
      return false;
    }
  }, 'must be an https URL without credentials')
  .meta({ format: 'uri' });

export const PrimaryColour = z
  .string()
  .max(7)
  .regex(HEX_COLOUR, 'must be a colour as #rrggbb')
  .superRefine((hex, ctx) => {
    if (!HEX_COLOUR.test(hex)) return;
    const reason = unreadableColourReason(hex);
    if (reason) ctx.addIssue({ code: 'custom', message: `unreadable: ${reason}` });
  })
  .meta({
    description:
      'The primary colour as #rrggbb: the dashboard header and buttons (white text on it), links, the Checkout button. Refused unless it has a WCAG AA contrast of 4.5:1 against white and against the dashboard background #f6f7f9.',
    example: '#2f5fd0',
  });

export const BrandLogo = z
  .object({
    url: z.string().max(2048).meta({
      description:
        'Where the logo is served: the dashboard origin, `/brand/logo-<hash>.<ext>` (a new file for each upload, so caches never serve an old one).',
    }),
    sha256: z
      .string()
      .length(64)
      .regex(/^[0-9a-f]{64}$/)
      .meta({ description: "SHA-256 of the file's bytes, hex." }),
    contentType: z.enum(['image/png', 'image/jpeg']),
    width: int32(1, 4096),
    height: int32(1, 4096),
    bytes: int32(1, 262_144),
  })
  .strict()
  .meta({
    id: 'BrandLogo',
    description: 'Set by PUT /v1/admin/brand/logo, not by PUT /v1/admin/settings (which may send it back unchanged, or null to remove it).',
  });

export const Brand = z
  .object({
    name: SafeText.trim().min(1).max(80).meta({ description: 'The operator name: dashboard header, page titles, PDFs, Checkout, e-mail.' }),
    primaryColor: PrimaryColour,
    supportEmail: Email.nullable().meta({ description: 'Where customers write for help (dashboard footer, e-mail).' }),
    supportUrl: Link.nullable(),
    termsUrl: Link.nullable(),
    privacyUrl: Link.nullable(),
    legalFooter: SafeText.trim().min(1).max(600).nullable().meta({
      description: 'One paragraph at the foot of the invoice and credit-note PDFs and of e-mails (company registration, address).',
    }),
    logo: BrandLogo.nullable(),
  })
  .strict()
  .meta({ id: 'Brand', description: "The operator's brand, shown to customers; public (GET /v1/brand)." });

export type BrandValue = z.infer<typeof Brand>;

/** 256 KB of image as base64 (4/3 of it), with room for padding. */
const MAX_LOGO_BASE64 = Math.ceil(262_144 / 3) * 4;

export const LogoUpload = z
  .object({
    dataBase64: z
      .string()
      .min(4)
      .max(MAX_LOGO_BASE64 + 4, 'the logo must be at most 256 KB')
      .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64')
      .meta({ description: 'The PNG or JPEG file, base64; at most 256 KB decoded, 16 to 1024 pixels a side.' }),
  })
  .strict()
  .meta({ id: 'LogoUpload' });
