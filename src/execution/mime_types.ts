/**
 * MIME types of output files, by extension (enough for what scripts commonly write).
 */
const TYPES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  svg: "image/svg+xml",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  html: "text/html",
  xml: "application/xml",
  py: "text/x-python",
  pdf: "application/pdf",
  zip: "application/zip",
};

export function mimeType(name: string): string {
  const ext = name.includes(".") ? name.slice(name.lastIndexOf(".") + 1).toLowerCase() : "";
  return TYPES[ext] ?? "application/octet-stream";
}

export function isText(mime: string): boolean {
  return mime.startsWith("text/") || mime === "application/json" || mime === "application/xml" ||
    mime === "image/svg+xml";
}
