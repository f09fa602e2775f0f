/**
 * xterm.js's DOM renderer styles itself with `<style>` elements it writes at run time (theme
 * colours, cell size, scrollbar); the dashboard's Content-Security-Policy (`style-src 'self'`, no
 * 'unsafe-inline') blocks those, and the terminal would draw without colours or cell sizes. While a
 * terminal lives, a `<style>` that the page creates is instead an inert, hidden `<template>` whose
 * text goes to a constructed stylesheet adopted by the document: CSSOM, which the policy allows
 * (as it does `element.style`), and no inline style for the browser to refuse. Nothing else in the
 * app creates `<style>` elements (they would be refused anyway).
 */
let active = 0;
let original: Document['createElement'] | undefined;
const owned = new Set<CSSStyleSheet>();

function sync(): void {
  document.adoptedStyleSheets = [...document.adoptedStyleSheets.filter((s) => !owned.has(s)), ...owned];
}

function standIn(tagName: string, options?: ElementCreationOptions): HTMLElement {
  const create = original!;
  if (tagName.toLowerCase() !== 'style') return create.call(document, tagName, options);
  const element = create.call(document, 'template');
  element.dataset.xtermStyle = '';
  const sheet = new CSSStyleSheet();
  let text = '';
  Object.defineProperty(element, 'textContent', {
    configurable: true,
    get: () => text,
    set: (value: unknown) => {
      text = value == null ? '' : String(value);
      sheet.replaceSync(text);
    },
  });
  const remove = element.remove.bind(element);
  element.remove = () => {
    owned.delete(sheet);
    sync();
    remove();
  };
  owned.add(sheet);
  sync();
  return element;
}

/** Runs `open` (and everything after it, until `dispose`) with `<style>` turned into adopted sheets. */
export function adoptTerminalStyles(open: () => void): { dispose(): void } {
  if (active++ === 0) {
    original = document.createElement;
    document.createElement = standIn as Document['createElement'];
  }
  let disposed = false;
  try {
    open();
  } catch (error) {
    release();
    throw error;
  }
  function release(): void {
    if (disposed) return;
    disposed = true;
    if (--active === 0 && original) {
      document.createElement = original;
      original = undefined;
    }
  }
  return { dispose: release };
}
