/**
 * The links of a package index's project page (PEP 503's "simple" HTML: one
 * `<a href="...">file name</a>` per file), read in one pass over the page (pure). An index may
 * send any page up to its size cap: a regular expression whose parts overlapped backtracked over
 * one that did not match (24 KB of `<a href="x" ` with no `>` held the host's thread 43 s).
 */

export interface IndexLink {
  /** The `href` as written (entities not decoded). */
  href: string;
  /** The link's text: the file name. */
  text: string;
}

/** Every `<a ...href="...">text</a>` of `html`, in order; the rest is ignored. */
export function indexLinks(html: string): IndexLink[] {
  const links: IndexLink[] = [];
  const tag = /<a\s/gi;
  for (let open = tag.exec(html); open !== null; open = tag.exec(html)) {
    const attributesEnd = html.indexOf(">", tag.lastIndex);
    if (attributesEnd === -1) break; // no tag ends after this one
    const textEnd = html.indexOf("<", attributesEnd + 1);
    if (textEnd === -1) break;
    tag.lastIndex = textEnd; // each search starts past the last: one pass
    if (html.slice(textEnd, textEnd + 4).toLowerCase() !== "</a>") continue;
    const attributes = html.slice(open.index + 2, attributesEnd);
    const href = /href="/i.exec(attributes);
    if (!href) continue;
    const valueStart = href.index + 'href="'.length;
    const valueEnd = attributes.indexOf('"', valueStart);
    if (valueEnd <= valueStart) continue; // unclosed or empty
    links.push({
      href: attributes.slice(valueStart, valueEnd),
      text: html.slice(attributesEnd + 1, textEnd),
    });
  }
  return links;
}
