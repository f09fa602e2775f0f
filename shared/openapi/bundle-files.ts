/**
 * The files the public function serves from its Lambda asset folder, written there by
 * infra/bundle.ts: the OpenAPI document, built ahead of time so that no cold start spends CPU
 * generating it, and the Swagger UI's files for /docs. Outside Lambda (the local stack, the tests)
 * the document is built in process and the Swagger UI read from the swagger-ui-dist package.
 */

import { getConfig } from '../config/env.ts';

/** The prebuilt document, in the asset folder. */
export const DOCUMENT_FILE = 'openapi.json';
/** The Swagger UI's files, in `assets/` of the asset folder. */
export const ASSETS_DIR = 'assets';
export const SWAGGER_UI_FILES = ['swagger-ui.css', 'swagger-ui-bundle.js'] as const;

/**
 * The asset folder the function runs from: Lambda's task root, not the folder of this code, which
 * sits in the bundle's `chunks/`. Undefined outside Lambda.
 */
export const bundleFolder = (): string | undefined => getConfig().bundleFolder;

/**
 * The document's text is built once with this as its server URL; each answer puts the caller's
 * address in its place, so a prebuilt text serves every host.
 */
export const SERVER_URL_PLACEHOLDER = 'https://server-url.invalid';

/** The document's text with `serverUrl` as its server: the same bytes as the document built with that URL. */
export const withServerUrl = (text: string, serverUrl: string): string =>
  text.replace(JSON.stringify(SERVER_URL_PLACEHOLDER), () => JSON.stringify(serverUrl));
