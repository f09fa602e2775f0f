import { useEffect, useState } from 'preact/hooks';
import { api, ok, type Schema } from './api.ts';
import { setSiteName } from './brand-context.ts';

export type Brand = Schema<'Brand'>;

/**
 * The operator's brand (GET /v1/brand, public): the header's name and logo, the primary colour as
 * the CSS variable `--brand` (light scheme: the accent too), and the footer's links.
 */
export function applyBrand(brand: Brand): void {
  document.documentElement.style.setProperty('--brand', brand.primaryColor);
  setSiteName(brand.name);
}

/** The brand, read once per load; null until it arrives (the default look meanwhile), and if it cannot be read. */
export function useBrand(): [Brand | null, (brand: Brand) => void] {
  const [brand, setBrand] = useState<Brand | null>(null);
  useEffect(() => {
    ok(api().GET('/v1/brand')).then(
      (b) => {
        applyBrand(b);
        setBrand(b);
      },
      () => undefined,
    );
  }, []);
  const update = (b: Brand) => {
    applyBrand(b);
    setBrand(b);
  };
  return [brand, update];
}

/** The header's mark: the logo (decorative beside the name) and the name. */
export function BrandMark(props: { brand: Brand | null; href: string }) {
  const name = props.brand?.name ?? 'Control panel';
  return (
    <a class="brand" href={props.href} data-testid="brand-name">
      {props.brand?.logo ? <img class="brand-logo" src={props.brand.logo.url} alt="" width={28} height={28} /> : null}
      <span>{name}</span>
    </a>
  );
}

/** Support, terms and privacy, as the brand sets them; nothing when none is. */
export function BrandFooter(props: { brand: Brand | null }) {
  const b = props.brand;
  if (!b) return null;
  const links = [
    b.supportUrl ? { href: b.supportUrl, label: 'Support' } : null,
    b.supportEmail ? { href: `mailto:${b.supportEmail}`, label: b.supportEmail } : null,
    b.termsUrl ? { href: b.termsUrl, label: 'Terms' } : null,
    b.privacyUrl ? { href: b.privacyUrl, label: 'Privacy' } : null,
  ].filter((l): l is { href: string; label: string } => l !== null);
  if (links.length === 0) return null;
  return (
    <footer class="site-footer" data-testid="brand-footer">
      <ul>
        {links.map((l) => (
          <li key={l.href}>
            <a href={l.href} rel="noopener noreferrer">
              {l.label}
            </a>
          </li>
        ))}
      </ul>
    </footer>
  );
}
