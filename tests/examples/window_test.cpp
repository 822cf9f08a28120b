// An example in a window: mpm88 runs under Xvfb (an X server without a
// screen) on Vulkan, presents its frames through a swapchain on the window's
// own device (which Grove computes on), and the last presented frame, read
// back from the X server, is the frame it wrote as PNG, pixel for pixel.
// Without a display the same program writes PNG only, and --window says why.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <stb_image.h>

extern char** environ;

namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Xvfb on the first free display number, which it reports on a pipe.
class VirtualDisplay {
 public:
  explicit VirtualDisplay(const std::string& xvfb) {
    int fds[2];
    if (pipe(fds) != 0) return;
    const std::string fd = std::to_string(fds[1]);
    std::vector<std::string> args = {xvfb, "-displayfd", fd,          "-screen",
                                     "0",  "640x480x24", "-nolisten", "tcp"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    const int spawned = posix_spawn(&pid_, xvfb.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (spawned != 0) {
      pid_ = -1;
      close(fds[0]);
      return;
    }
    std::string number;
    char c = 0;
    while (read(fds[0], &c, 1) == 1 && c != '\n') number += c;
    close(fds[0]);
    if (!number.empty()) name_ = ":" + number;
  }
  ~VirtualDisplay() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  const std::string& name() const { return name_; }  // "" if it did not start

 private:
  pid_t pid_ = -1;
  std::string name_;
};

struct Png {
  int width = 0, height = 0;
  std::vector<unsigned char> rgb;
};

Png load(const fs::path& path) {
  Png p;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &p.width, &p.height, &channels, 3);
  if (data == nullptr) return p;
  p.rgb.assign(data, data + static_cast<size_t>(p.width) * p.height * 3);
  stbi_image_free(data);
  return p;
}

class Window : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* example = std::getenv("GROVE_MPM88");
    ASSERT_TRUE(example != nullptr) << "run through ctest (it sets GROVE_MPM88)";
    mpm88 = example;
    dir = fs::path(::testing::TempDir()) / ("grove_window_" + std::to_string(getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  // Runs mpm88 with `display` as DISPLAY ("" unsets it); its exit status,
  // and its output in `log`.
  int run(const std::string& display, const std::string& args, std::string* log) {
    const fs::path out = dir / "log.txt";
    const std::string env =
        display.empty() ? "env -u DISPLAY -u WAYLAND_DISPLAY " : "DISPLAY=" + display + " ";
    const int status =
        std::system((env + mpm88 + " " + args + " > " + out.string() + " 2>&1").c_str());
    *log = read_file(out);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  std::string mpm88;
  fs::path dir;
};

TEST_F(Window, TheLastPresentedFrameIsTheFrameWrittenAsPng) {
  const char* xvfb = GROVE_XVFB;
  if (*xvfb == '\0') GTEST_SKIP() << "no Xvfb (Debian's xvfb; scripts/install-deps.sh installs it)";
  VirtualDisplay display(xvfb);
  ASSERT_FALSE(display.name().empty()) << "Xvfb did not start";
  std::string log;
  const std::string shot = (dir / "shot.png").string();
  ASSERT_EQ(run(display.name(),
                "--arch vulkan --steps 3 --size 256 --window --screenshot " + shot + " --out " +
                    dir.string(),
                &log),
            0)
      << log;
  // The window opened, and Grove computed on the window's device.
  EXPECT_NE(log.find("mpm88: a 256 x 256 window on "), std::string::npos) << log;
  EXPECT_NE(log.find("running on vulkan"), std::string::npos) << log;
  const Png written = load(dir / "mpm88.png"), shown = load(shot);
  ASSERT_EQ(written.width, 256);
  ASSERT_EQ(shown.width, 256);
  ASSERT_EQ(shown.height, 256);
  // Not an empty frame: pixels unlike the background's (the corner's) are
  // particles, thousands of them.
  int particles = 0;
  for (size_t p = 0; p < written.rgb.size(); p += 3)
    particles += written.rgb[p] != written.rgb[0] || written.rgb[p + 1] != written.rgb[1] ||
                 written.rgb[p + 2] != written.rgb[2];
  EXPECT_GT(particles, 1000);
  size_t differ = 0;
  for (size_t b = 0; b < written.rgb.size(); ++b) differ += written.rgb[b] != shown.rgb[b];
  EXPECT_EQ(differ, 0u) << "bytes of the window's screenshot that differ from the PNG";
}

TEST_F(Window, WithoutADisplayTheExampleWritesPngAndSaysWhy) {
  std::string log;
  // (Arch::Auto: the fastest backend here; the interpreter under the
  // sanitizers takes a minute for mpm88's 50 substeps.)
  ASSERT_EQ(run("", "--steps 1 --size 64 --out " + dir.string(), &log), 0) << log;
  EXPECT_NE(log.find("mpm88: no display (DISPLAY is not set); writing PNG only"), std::string::npos)
      << log;
  EXPECT_TRUE(fs::exists(dir / "mpm88.png"));
  // Asked for a window it cannot have: an error saying why, exit 1.
  EXPECT_EQ(run("", "--steps 1 --size 64 --window --out " + dir.string(), &log), 1)
      << log;
  EXPECT_NE(log.find("--window: no display (DISPLAY is not set)"), std::string::npos) << log;
}

}  // namespace
