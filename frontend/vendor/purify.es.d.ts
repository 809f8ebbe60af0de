// The part of DOMPurify's API that frontend/js/markdown.js uses. tsc reads this instead of the
// vendored purify.es.js, which is third-party code we do not type-check.
export interface SanitizeConfig {
  ALLOWED_TAGS?: string[];
  ALLOWED_ATTR?: string[];
  ALLOW_DATA_ATTR?: boolean;
  ALLOW_ARIA_ATTR?: boolean;
  SANITIZE_DOM?: boolean;
  ALLOWED_URI_REGEXP?: RegExp;
  RETURN_DOM_FRAGMENT?: boolean;
}

export interface DOMPurifyI {
  /** A separate instance (its own hooks and settings) for `root`. */
  (root: Window): DOMPurifyI;
  sanitize(dirty: string, config: SanitizeConfig & { RETURN_DOM_FRAGMENT: true }): DocumentFragment;
  sanitize(dirty: string, config?: SanitizeConfig): string;
  addHook(entryPoint: "afterSanitizeAttributes", hook: (node: Element) => void): void;
}

declare const DOMPurify: DOMPurifyI;
export default DOMPurify;
