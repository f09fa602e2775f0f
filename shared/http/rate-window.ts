/** The rate limit's window and largest claim: read by the limiter (./rate-limit.ts) and by its write (./rate-claim.ts), which it loads on use. */
export const WINDOW_SECONDS = 60;
export const MAX_CLAIM = 8;
