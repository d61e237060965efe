/**
 * The geolocation error messages of spec section 7.1, spelled exactly as clients match them.
 *
 * Clients compare these strings literally, so every module that reports a `/process` error
 * takes its text from here rather than writing it out again.
 */
export const GeoMessage = {
  invalidRequest: 'Invalid request',
  noCellId: 'No cell ID provided',
  noLac: 'No location area code provided',
  noCountryCode: 'No country code provided',
  noNetworkData: 'No network data provided',
  noValidCells: 'No valid cell IDs or LACs provided',
  invalidMnc: 'Invalid network code (mnc)',
  invalidMcc: 'Invalid country code (mcc)',
  noMatches: 'No matches found',
  noMatchesRetry: 'No matches found, please try again shortly',
  invalidToken: 'Invalid token - get a trial token by signing up for free',
  balanceOver: 'Token balance over; you have used up all your requests for today',
} as const;

/** One of the spec 7.1 message texts. */
export type GeoMessageText = (typeof GeoMessage)[keyof typeof GeoMessage];
