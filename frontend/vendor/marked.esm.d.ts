// The part of marked's API that frontend/js/markdown.js uses. tsc reads this instead of the
// vendored marked.esm.js, which is third-party code we do not type-check.
export interface ImageToken {
  href: string;
  title: string | null;
  /** The alt text, as written. */
  text: string;
}

/** Raw HTML written in the source: a block of it, or one inline tag. */
export interface HtmlToken {
  text: string;
  block?: boolean;
}

export interface RendererOverrides {
  image?(token: ImageToken): string;
  html?(token: HtmlToken): string;
}

export interface MarkedOptions {
  gfm?: boolean;
  breaks?: boolean;
  async?: false;
  renderer?: RendererOverrides;
}

export class Marked {
  constructor(options?: MarkedOptions);
  parse(src: string): string;
}
