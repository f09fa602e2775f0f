/**
 * WCAG 2.x contrast, exactly as the definition states: sRGB channels linearised with the 0.04045
 * threshold, relative luminance L = 0.2126 R + 0.7152 G + 0.0722 B, and the ratio
 * (L1 + 0.05) / (L2 + 0.05) with L1 the lighter. AA for normal text needs 4.5:1.
 */
export const AA_NORMAL_TEXT = 4.5;

/** `#rrggbb` (either case). Short forms and names are refused by the schema, so one parser serves. */
export const HEX_COLOUR = /^#[0-9a-fA-F]{6}$/;

/** The backgrounds and text the brand colour meets in the dashboard: white text on it, and it as link text on the page background. */
export const WHITE = '#ffffff';
export const DASHBOARD_BACKGROUND = '#f6f7f9';

function channel(byte: number): number {
  const c = byte / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

export function relativeLuminance(hex: string): number {
  if (!HEX_COLOUR.test(hex)) throw new Error(`not a #rrggbb colour: ${hex}`);
  const [r, g, b] = [1, 3, 5].map((i) => channel(Number.parseInt(hex.slice(i, i + 2), 16))) as [number, number, number];
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

export function contrastRatio(a: string, b: string): number {
  const [la, lb] = [relativeLuminance(a), relativeLuminance(b)];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/** The ratio rounded down to two decimals, as people quote it (4.49 fails, never shown as 4.5). */
export const formatRatio = (ratio: number): string => `${(Math.floor(ratio * 100) / 100).toFixed(2)}:1`;

/**
 * Why a primary colour cannot be used, or null: it fails AA against white text on it (the header,
 * buttons) or as text on the dashboard's background (links).
 */
export function unreadableColourReason(hex: string): string | null {
  const onWhite = contrastRatio(hex, WHITE);
  const onBackground = contrastRatio(hex, DASHBOARD_BACKGROUND);
  if (onWhite >= AA_NORMAL_TEXT && onBackground >= AA_NORMAL_TEXT) return null;
  return `contrast ${formatRatio(onWhite)} against white text and ${formatRatio(onBackground)} against the dashboard background (${DASHBOARD_BACKGROUND}); WCAG AA needs ${AA_NORMAL_TEXT}:1 for both: choose a darker colour`;
}
