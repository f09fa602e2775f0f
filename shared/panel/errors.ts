import { ApiError } from '../errors.ts';

/**
 * A failed panel call, in our envelope. Keeps the panel's status and its error entries (the 422
 * field errors in particular) so callers can branch on them; never carries a key or a header.
 */
export interface PanelErrorEntry {
  code?: string;
  status?: string;
  detail?: string;
  meta?: { source_field?: string; rule?: string };
}

export class PanelRequestError extends ApiError {
  readonly panelStatus: number | undefined;
  readonly panelErrors: PanelErrorEntry[];
  readonly sent: boolean;

  constructor(
    code: 'panel_error' | 'panel_timeout' | 'conflict' | 'panel_unavailable' | 'rate_limited',
    message: string,
    panelStatus: number | undefined,
    panelErrors: PanelErrorEntry[] = [],
    options: {
      /** When to try again (panel_unavailable: a spent call budget, a 429, a panel that does not answer). */
      retryAfterSeconds?: number;
      /** False when the request never left: the call budget refused it, so nothing can have happened. */
      sent?: boolean;
    } = {},
  ) {
    const { retryAfterSeconds } = options;
    const details: Record<string, unknown> = { panelStatus: panelStatus ?? null };
    if (retryAfterSeconds !== undefined) details.retryAfterSeconds = retryAfterSeconds;
    const fields = panelErrors.filter((e) => e.meta?.source_field);
    if (fields.length) details.fieldErrors = fields.map((e) => ({ field: e.meta!.source_field, rule: e.meta!.rule, message: e.detail }));
    else if (panelErrors[0]?.detail) details.panelMessage = panelErrors[0].detail;
    super(code, message, details, retryAfterSeconds !== undefined ? { 'Retry-After': String(retryAfterSeconds) } : {});
    this.name = 'PanelRequestError';
    this.panelStatus = panelStatus;
    this.panelErrors = panelErrors;
    this.sent = options.sent ?? true;
  }
}

export const isPanelStatus = (err: unknown, status: number): boolean => err instanceof PanelRequestError && err.panelStatus === status;

/**
 * A change whose outcome is unknown: the request left, and no answer says what the panel did (a
 * timeout, a lost connection, a 5xx). Callers settle it by reading the panel back.
 */
export const isAmbiguous = (err: unknown): err is PanelRequestError =>
  err instanceof PanelRequestError && err.sent && (err.code === 'panel_timeout' || err.panelStatus === undefined || err.panelStatus >= 500);
