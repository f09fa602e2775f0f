import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BrandLogo, BrandValue } from '../api/schemas/brand.ts';
import { getConfig } from '../config/env.ts';
import { ApiError } from '../errors.ts';
import { loadS3, type S3Client } from '../packages.ts';
import { updateSettings } from '../settings/update.ts';
import type { z } from 'zod';

/**
 * The brand's logo (PUT /v1/admin/brand/logo): a PNG or JPEG told by its magic bytes, whatever it
 * is called; SVG and every other format are refused (an SVG can carry script). Stored under a name
 * of its content hash, so each upload is a new URL and no cache ever serves an old logo.
 */
export const MAX_LOGO_BYTES = 262_144;
/** The key prefix (and URL path) of logos: infra grants the admin function this prefix only. */
export const BRAND_PREFIX = 'brand/';
export const LOGO_SIDE = { min: 16, max: 1024 } as const;

type Image = { contentType: z.infer<typeof BrandLogo>['contentType']; width: number; height: number };

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** The image's format and size from its header, or null when it is neither a PNG nor a baseline/progressive JPEG. */
export function inspectImage(bytes: Uint8Array): Image | null {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // PNG: the signature, then IHDR first, whose data starts with width and height (big endian).
  if (bytes.length >= 24 && PNG_SIGNATURE.every((b, i) => bytes[i] === b)) {
    if (String.fromCharCode(...bytes.subarray(12, 16)) !== 'IHDR') return null;
    return { contentType: 'image/png', width: view.getUint32(16), height: view.getUint32(20) };
  }
  // JPEG: SOI, then segments until a start-of-frame (SOF0–SOF15 but DHT, JPG and DAC) holding height and width.
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) {
    let at = 2;
    while (at + 9 < bytes.length) {
      if (bytes[at] !== 0xff) return null;
      const marker = bytes[at + 1]!;
      if (marker === 0xff) {
        at += 1;
        continue;
      }
      const length = view.getUint16(at + 2);
      if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
        return { contentType: 'image/jpeg', width: view.getUint16(at + 7), height: view.getUint16(at + 5) };
      }
      if (marker === 0xda || length < 2) return null;
      at += 2 + length;
    }
  }
  return null;
}

/** Made on the first upload: the admin function's other routes never load the S3 client. */
let s3: S3Client | undefined;

const refuse = (message: string) =>
  new ApiError('validation_failed', `The logo was not taken: ${message}. Nothing was changed.`, {
    issues: [{ field: 'body.dataBase64', message }],
  });

/** Checks, stores and sets the logo; returns the brand with it. `baseUrl`: this request's origin, where the local stack serves it. */
export async function uploadLogo(dataBase64: string, baseUrl: string, actorId: string): Promise<BrandValue> {
  const bytes = new Uint8Array(Buffer.from(dataBase64, 'base64'));
  if (bytes.length > MAX_LOGO_BYTES) throw refuse(`it is ${bytes.length} bytes, more than 256 KB (${MAX_LOGO_BYTES} bytes)`);
  const image = inspectImage(bytes);
  if (!image) throw refuse('only PNG and JPEG files are taken (SVG is not: it can carry script)');
  const { width, height } = image;
  if (Math.min(width, height) < LOGO_SIDE.min || Math.max(width, height) > LOGO_SIDE.max) {
    throw refuse(`it is ${width}×${height} pixels; each side must be ${LOGO_SIDE.min} to ${LOGO_SIDE.max}`);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const key = `${BRAND_PREFIX}logo-${sha256.slice(0, 16)}.${image.contentType === 'image/png' ? 'png' : 'jpg'}`;
  const assets = getConfig().brandAssets;
  if (assets.bucket) {
    const { PutObjectCommand, S3Client } = await loadS3();
    // Region, credentials and any endpoint (AWS_ENDPOINT_URL_S3) from the environment, as Lambda sets them.
    s3 ??= new S3Client({});
    await s3.send(
      new PutObjectCommand({
        Bucket: assets.bucket,
        Key: key,
        Body: bytes,
        ContentType: image.contentType,
        // Immutable: the name changes with the content.
        CacheControl: 'public, max-age=31536000, immutable',
      }),
    );
  } else if (assets.dir) {
    await mkdir(assets.dir, { recursive: true });
    await writeFile(join(assets.dir, key.slice(BRAND_PREFIX.length)), bytes);
  } else {
    throw new ApiError(
      'conflict',
      'This deployment has no place for the logo (no dashboard bucket): deploy the dashboard first. Nothing was changed.',
    );
  }
  const logo = { url: `${assets.baseUrl ?? baseUrl}/${key}`, sha256, ...image, bytes: bytes.length };
  const { after } = await updateSettings({ brand: { logo } }, actorId, { logoUpload: true });
  return after.brand;
}
