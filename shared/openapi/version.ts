/** The API's version, as the OpenAPI document and GET /v1/health state it. */
export const API_VERSION = '1.0.0';
