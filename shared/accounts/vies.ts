import { getConfig } from '../config/env.ts';
import { errorFields, logger } from '../observability/logger.ts';

/**
 * VAT ids checked against VIES, the EU's register of VAT numbers (its REST API,
 * `POST <base>/check-vat-number` with `{countryCode, vatNumber}`, answering `{valid, …}`). In AWS
 * the real service; locally a stand-in with the same answers offline (dev/vies-stand-in.ts). VIES
 * is often down for a member state: then the answer is `null` (unknown), which never earns a reverse charge.
 */

/** The prefixes VIES knows: the 27 member states (Greece is EL) and Northern Ireland (XI). */
const VIES_PREFIXES = new Set([
  'AT',
  'BE',
  'BG',
  'CY',
  'CZ',
  'DE',
  'DK',
  'EE',
  'EL',
  'ES',
  'FI',
  'FR',
  'HR',
  'HU',
  'IE',
  'IT',
  'LT',
  'LU',
  'LV',
  'MT',
  'NL',
  'PL',
  'PT',
  'RO',
  'SE',
  'SI',
  'SK',
  'XI',
]);

const TIMEOUT_MS = 5_000;

/** A VAT id as VIES takes it: prefix and number, without the spaces, dots and dashes people type. */
export function viesParts(vatId: string): { countryCode: string; vatNumber: string } | null {
  const compact = vatId.toUpperCase().replace(/[^0-9A-Z]/g, '');
  const countryCode = compact.slice(0, 2);
  return VIES_PREFIXES.has(countryCode) && compact.length > 2 ? { countryCode, vatNumber: compact.slice(2) } : null;
}

/** True or false as VIES says; null when VIES could not answer (or the id is not an EU one it can check). */
export async function checkVatId(vatId: string): Promise<boolean | null> {
  const parts = viesParts(vatId);
  if (!parts) return null;
  try {
    const res = await fetch(`${getConfig().viesApiUrl}/check-vat-number`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(parts),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    const answer = (await res.json().catch(() => null)) as { valid?: unknown } | null;
    if (res.ok && typeof answer?.valid === 'boolean') return answer.valid;
    logger.warn('vies could not check a vat id', { status: res.status, countryCode: parts.countryCode });
    return null;
  } catch (err) {
    logger.warn('vies unreachable', { countryCode: parts.countryCode, ...errorFields(err) });
    return null;
  }
}
