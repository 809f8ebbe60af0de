// The part of DOMPurify's API that frontend/js/markdown.js uses. tsc reads this instead of the
// vendored purify.es.js, which is third-party code we do not type-check.
export interface SanitizeConfig {
  USE_PROFILES?: { html?: boolean; svg?: boolean; mathMl?: boolean };
  FORBID_TAGS?: string[];
  FORBID_ATTR?: string[];
  ALLOWED_URI_REGEXP?: RegExp;
}

export interface DOMPurifyI {
  sanitize(dirty: string, config?: SanitizeConfig): string;
  addHook(entryPoint: "afterSanitizeAttributes", hook: (node: Element) => void): void;
}

declare const DOMPurify: DOMPurifyI;
export default DOMPurify;
