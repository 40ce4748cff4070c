//! Reading what a repository holds: its tags (`GET /v2/<name>/tags/list`, following `Link`
//! pages) and the package layer a manifest names.

use reqwest::header::LINK;
use reqwest::{Method, StatusCode};
use serde::Deserialize;

use crate::auth::Credentials;
use crate::client::Client;
use crate::error::{Error, Result};
use crate::manifest::{check_module_manifest, Descriptor};
use crate::reference::{validate_digest, ModuleRef};
use crate::transport::{read_limited, Req};

/// At most this many pages of tags are read (a registry that never ends its list is an error).
const MAX_PAGES: usize = 100;

impl Client {
    /// Every tag of `r`'s repository, sorted (the reference's own tag or digest is ignored).
    pub async fn tags(&self, r: &ModuleRef, creds: Option<&Credentials>) -> Result<Vec<String>> {
        #[derive(Deserialize)]
        struct TagList {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let mut s = self.session(r, creds, false);
        let mut url = s.url("/tags/list?n=1000");
        let mut out = Vec::new();
        for _ in 0..MAX_PAGES {
            let resp = s.send(&Req::new(Method::GET, &url)).await?;
            match resp.status() {
                StatusCode::OK => {}
                StatusCode::NOT_FOUND => {
                    return Err(Error::NotFound {
                        registry: r.registry.clone(),
                        what: format!("repository {}", r.repository),
                    })
                }
                _ => return Err(s.unexpected("GET tags/list", resp).await),
            }
            let next = resp
                .headers()
                .get(LINK)
                .and_then(|v| v.to_str().ok())
                .and_then(next_link);
            let body = read_limited(resp, 16 * 1024 * 1024)
                .await
                .map_err(|e| s.unreachable(&e))?
                .ok_or_else(|| Error::Registry {
                    registry: r.registry.clone(),
                    operation: "GET tags/list".into(),
                    status: 200,
                    detail: "the tag list is larger than 16 MiB".into(),
                })?;
            let page: TagList = serde_json::from_slice(&body).map_err(|_| Error::Registry {
                registry: r.registry.clone(),
                operation: "GET tags/list".into(),
                status: 200,
                detail: "the answer is not a tag list".into(),
            })?;
            out.extend(page.tags.unwrap_or_default());
            match next {
                Some(path) => url = format!("{}{}", s.base, path),
                None => {
                    out.sort();
                    out.dedup();
                    return Ok(out);
                }
            }
        }
        Err(Error::Registry {
            registry: r.registry.clone(),
            operation: "GET tags/list".into(),
            status: 200,
            detail: format!("more than {MAX_PAGES} pages of tags"),
        })
    }

    /// The `archive/zip` layer of the module package at manifest `digest`, checked by OpenTofu's
    /// rules (see the crate docs).
    pub async fn package_layer(
        &self,
        r: &ModuleRef,
        digest: &str,
        creds: Option<&Credentials>,
    ) -> Result<Descriptor> {
        validate_digest(digest)?;
        let mut s = self.session(r, creds, false);
        let (manifest, content_type) = self.get_manifest(&mut s, digest).await?;
        check_module_manifest(&manifest, content_type.as_deref())
    }
}

/// The path of a `Link: </v2/…?last=x&n=y>; rel="next"` header (only same-host paths).
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
        let next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"");
        (next && target.starts_with("/v2/")).then(|| target.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::next_link;

    #[test]
    fn next_links() {
        let cases = [
            (
                r#"</v2/acme/tags/list?last=b&n=2>; rel="next""#,
                Some("/v2/acme/tags/list?last=b&n=2"),
            ),
            (r#"</v2/a/tags/list?n=1>; rel="prev""#, None),
            (r#"<https://evil/v2/a/tags/list>; rel="next""#, None),
            ("garbage", None),
        ];
        for (header, want) in cases {
            assert_eq!(next_link(header).as_deref(), want, "{header}");
        }
    }
}
