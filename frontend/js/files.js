// The files the agent produced in this session's workspace, with download links. Only the
// path and size are shown, as text; the download is served as an attachment.

import { h, icon, replaceChildren } from "./dom.js";
import { t } from "./i18n.js";

export class FilesView {
  constructor(root) {
    this.root = root;
  }

  /** `files`: the session snapshot's `files`, or a `session.files` event's. */
  render(files) {
    const list = files || [];
    this.root.hidden = list.length === 0;
    replaceChildren(
      this.root,
      h("h3", { class: "files-title", text: t("files_title", { count: list.length }) }),
      h(
        "ul",
        { class: "files-list" },
        list.map((file) =>
          h(
            "li",
            { class: "file", dataset: { path: file.path } },
            h(
              "a",
              { href: file.download_url, download: "", class: "file-link" },
              icon("download"),
              h("span", { class: "file-path", text: file.path }),
            ),
            h("span", { class: "file-size", text: formatSize(file.size) }),
          ),
        ),
      ),
    );
  }
}

function formatSize(bytes) {
  if (bytes < 1024) return t("size_bytes", { n: bytes });
  return t("size_kb", { n: (bytes / 1024).toFixed(1) });
}
