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

  constructor(
    code: 'panel_error' | 'panel_timeout' | 'conflict',
    message: string,
    panelStatus: number | undefined,
    panelErrors: PanelErrorEntry[] = [],
  ) {
    const details: Record<string, unknown> = { panelStatus: panelStatus ?? null };
    const fields = panelErrors.filter((e) => e.meta?.source_field);
    if (fields.length) details.fieldErrors = fields.map((e) => ({ field: e.meta!.source_field, rule: e.meta!.rule, message: e.detail }));
    else if (panelErrors[0]?.detail) details.panelMessage = panelErrors[0].detail;
    super(code, message, details);
    this.name = 'PanelRequestError';
    this.panelStatus = panelStatus;
    this.panelErrors = panelErrors;
  }
}

export const isPanelStatus = (err: unknown, status: number): boolean => err instanceof PanelRequestError && err.panelStatus === status;
