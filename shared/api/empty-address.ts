/** A postal address with nothing set: the billing profile's and the invoice issuer's default. */
export const EMPTY_ADDRESS = {
  line1: null,
  line2: null,
  postalCode: null,
  city: null,
  region: null,
  country: null,
} as const satisfies Record<string, null>;
