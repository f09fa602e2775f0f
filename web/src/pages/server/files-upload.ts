/**
 * A file upload as the API hands it out (GET /v1/servers/:id/files/upload): a signed, single-use
 * Wings address that takes a multipart POST with one `files` field per file, no key. XMLHttpRequest
 * rather than fetch, for the upload's progress. Wings answers 200 with no body, or `{error}`.
 * Cross-origin: Wings answers CORS for its `remote` and `allowed_origins` (docs/api.md, Console), and
 * the dashboard's CSP allows connecting to the nodes (web/security-headers.ts).
 */
export function uploadFiles(url: string, files: File[], onProgress: (loaded: number, total: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', url);
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    };
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve();
      else reject(new Error(`The node refused the upload (${xhr.status}): ${wingsMessage(xhr.responseText)}`));
    };
    xhr.onerror = () =>
      reject(new Error('The upload could not reach the server’s node (a network error, or the node does not accept this origin).'));
    const form = new FormData();
    for (const file of files) form.append('files', file, file.name);
    xhr.send(form);
  });
}

function wingsMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === 'string') return body.error;
  } catch {
    // not JSON: quote it as it came
  }
  return text.slice(0, 200) || 'no details';
}
