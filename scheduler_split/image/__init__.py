"""Images: the built-in catalog, the client that reads it or an Image
service, and the stand-in Image API v2 that serves the catalog."""
