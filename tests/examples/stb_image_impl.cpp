// The one translation unit that compiles stb_image's implementation (PNG
// reading for tests that compare an example's frames).
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#include <stb_image.h>
